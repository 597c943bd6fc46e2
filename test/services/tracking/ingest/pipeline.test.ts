import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { DecodedPosition } from '../../../../src/services/tracking/protocols/types.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';
import { T0, deviceOf, positionsOf, registerDevice } from './support.ts';

function fix(seconds: number, overrides: Partial<DecodedPosition> = {}): DecodedPosition {
  const time = new Date(T0 + seconds * 1000);
  return { fixTime: time, deviceTime: time, valid: true, latitude: 52.5, longitude: 13.4, altitude: 40, speed: 10, course: 90, accuracy: 0, attributes: {}, ...overrides };
}

describeEachEngine('ingestion pipeline: memory never ahead of the database', (engine) => {
  let server: TestServer;
  let owner: TestLogin;

  before(async () => {
    server = await startTestServer(engine);
    owner = await server.login({ email: 'pipeline-owner@example.com' });
  });
  after(() => server.dispose());

  it('a write that fails leaves no trace: later status reports merge into the last stored fix, and the device goes on', async () => {
    const deviceId = await registerDevice(server, owner, 'pipeline-failing-write');
    const pipeline = server.tracking!.ingestion.pipeline;
    const device = await pipeline.identify('pipeline-failing-write');
    assert.ok(device);
    const accept = (message: Parameters<typeof pipeline.accept>[2]) => pipeline.accept(device, 'osmand', message, new Date());

    // Past the listeners' checks (say, a decoder bug): the database refuses the row.
    await assert.rejects(accept({ positions: [fix(60, { speed: Number.POSITIVE_INFINITY })], statuses: [] }), TypeError);
    // No fix to place it at, not the refused one: not stored.
    assert.deepEqual(await accept({ positions: [], statuses: [{ deviceTime: null, attributes: { batteryLevel: 50 } }] }), { withoutFix: 1 });
    assert.deepEqual(await positionsOf(server, owner, deviceId, 0), []);

    await accept({ positions: [fix(10)], statuses: [] });
    assert.deepEqual(await accept({ positions: [], statuses: [{ deviceTime: null, attributes: { batteryLevel: 40 } }] }), { withoutFix: 0 });
    const stored = await positionsOf(server, owner, deviceId, 0);
    assert.deepEqual(stored.map((position) => [position.fixTime, position.speed, position.attributes.batteryLevel]), [
      [fix(10).fixTime.toISOString(), 10, undefined],
      [fix(10).fixTime.toISOString(), 10, 40],
    ]);
    assert.equal((await deviceOf(server, owner, deviceId)).positionId, stored[1]?.id);
  });
});
