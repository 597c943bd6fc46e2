import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { loadConfig } from '../../../../src/config.ts';
import { createServer } from '../../../../src/server.ts';
import type { Server } from '../../../../src/server.ts';
import { signIn } from '../../../support/api.ts';
import { gt06Login } from '../../../../src/services/tracking/protocols/gt06/simulator.ts';
import { osmAndQuery } from '../../../../src/services/tracking/protocols/osmand/simulator.ts';
import { createSharedDatabase, testEngines } from '../../../support/engines.ts';
import type { SharedTestDatabase } from '../../../support/engines.ts';
import { scaledOutEnv } from '../../../support/server.ts';
import { DeviceConnection, fixAt } from './support.ts';

/**
 * DESIGN §5.4: "A device created or re-enabled is accepted on its very next connection", on any
 * instance. The instances share only the database here, no Redis: the guarantee must not rest on a
 * hint crossing between them.
 */
for (const engine of testEngines()) {
  describe(`devices accepted at once across two instances, without Redis [${engine.name}]`, () => {
    let shared: SharedTestDatabase | undefined;
    let first: Server;
    let second: Server;
    let headers: { authorization: string };
    const ports = { osmand: 0, gt06: 0 };

    before(async () => {
      shared = await createSharedDatabase(engine, 'trackstack-ingest-multi-');
      const env = Object.fromEntries(Object.entries(scaledOutEnv(shared, 'unused')).filter(([name]) => name !== 'REDIS_URL'));
      first = await createServer(loadConfig(env));
      second = await createServer(loadConfig(env));
      assert.ok(second.tracking);
      headers = (await signIn(first, `ingest-multi-${Date.now()}@example.com`)).authorization;
      ports.osmand = await second.tracking.ingestion.listen('osmand', 0);
      ports.gt06 = await second.tracking.ingestion.listen('gt06', 0);
    });
    after(async () => {
      await first?.close();
      await second?.close();
      await shared?.dispose();
    });

    const report = async (uniqueId: string, seconds: number): Promise<number> => {
      const response = await request(`http://127.0.0.1:${ports.osmand}/?${osmAndQuery(uniqueId, fixAt(seconds))}`);
      await response.body.dump();
      return response.statusCode;
    };
    const setDisabled = async (deviceId: number, disabled: boolean) => {
      const response = await first.app.inject({ method: 'PUT', url: `/api/devices/${deviceId}`, headers, payload: { disabled } });
      assert.equal(response.statusCode, 200, response.body);
    };

    it('an OsmAnd device refused by one instance is accepted by it right after the other creates or re-enables it', async () => {
      assert.equal(await report('phone-multi', 0), 404);
      const created = await first.app.inject({ method: 'POST', url: '/api/devices/', headers, payload: { name: 'phone', uniqueId: 'phone-multi' } });
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(await report('phone-multi', 1), 200);

      const disabled = await first.app.inject({ method: 'POST', url: '/api/devices/', headers, payload: { name: 'phone', uniqueId: 'phone-multi-disabled' } });
      assert.equal(disabled.statusCode, 201, disabled.body);
      const deviceId = disabled.json().id as number;
      await setDisabled(deviceId, true);
      assert.equal(await report('phone-multi-disabled', 0), 404, 'the second instance has read it disabled');
      await setDisabled(deviceId, false);
      assert.equal(await report('phone-multi-disabled', 1), 200);
    });

    it('a GT06 refused by one instance logs in to it right after the other creates it', async () => {
      const refused = await DeviceConnection.open(ports.gt06);
      refused.write(gt06Login('359710049097001', 1));
      await refused.assertClosed();
      const created = await first.app.inject({ method: 'POST', url: '/api/devices/', headers, payload: { name: 'gt06', uniqueId: '359710049097001' } });
      assert.equal(created.statusCode, 201, created.body);
      const accepted = await DeviceConnection.open(ports.gt06);
      accepted.write(gt06Login('359710049097001', 1));
      assert.equal((await accepted.read(10))[3], 0x01);
      await accepted.close();
    });
  });
}
