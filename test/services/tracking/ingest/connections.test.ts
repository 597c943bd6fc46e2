import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { Agent, request } from 'undici';
import { ConnectionsPerAddress } from '../../../../src/services/tracking/ingest/connection-limit.ts';
import { ReceiveBuffer } from '../../../../src/services/tracking/ingest/receive-buffer.ts';
import { gt06Login } from '../../../../src/services/tracking/protocols/gt06/simulator.ts';
import { osmAndQuery } from '../../../../src/services/tracking/protocols/osmand/simulator.ts';
import { teltonikaHandshake } from '../../../../src/services/tracking/protocols/teltonika/simulator.ts';
import { testEngines } from '../../../support/engines.ts';
import { eventually } from '../../../support/eventually.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';
import { DeviceConnection, fixAt, registerDevice } from './support.ts';

describe('connections per remote address', () => {
  it('admits up to the limit per address, counts each address apart, and admits again once one closes', () => {
    const limit = new ConnectionsPerAddress(2);
    assert.deepEqual([limit.open('10.0.0.1'), limit.open('10.0.0.1')].map((admission) => admission.accepted), [true, true]);
    assert.deepEqual(limit.open('10.0.0.1'), { accepted: false, firstRefusal: true });
    assert.deepEqual(limit.open('10.0.0.1'), { accepted: false, firstRefusal: false }, 'logged once');
    assert.equal(limit.open('10.0.0.2').accepted, true);
    limit.close('10.0.0.1');
    assert.equal(limit.count('10.0.0.1'), 1);
    assert.deepEqual(limit.open('10.0.0.1'), { accepted: true, firstRefusal: false });
    assert.deepEqual(limit.open('10.0.0.1'), { accepted: false, firstRefusal: true }, 'a new episode is logged again');
    for (const address of ['10.0.0.1', '10.0.0.1', '10.0.0.2']) limit.close(address);
    assert.deepEqual([limit.count('10.0.0.1'), limit.count('10.0.0.2')], [0, 0]);
  });
});

describe('receive buffer', () => {
  it('holds exactly the bytes appended and not consumed, however they are chunked and taken', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.uint8Array({ maxLength: 40 }), fc.nat(50)), { maxLength: 30 }), (steps) => {
        const buffer = new ReceiveBuffer();
        let expected = Buffer.alloc(0);
        const views: { view: Buffer; bytes: Buffer }[] = [];
        for (const [chunk, take] of steps) {
          buffer.append(Buffer.from(chunk));
          expected = Buffer.concat([expected, chunk]);
          assert.deepEqual(buffer.view(), expected);
          const view = buffer.view().subarray(0, take);
          views.push({ view, bytes: Buffer.from(view) });
          buffer.consume(take);
          expected = expected.subarray(Math.min(take, expected.length));
          assert.equal(buffer.length, expected.length);
        }
        // Frames handed out earlier are never overwritten by later appends.
        for (const { view, bytes } of views) assert.deepEqual(view, bytes);
      }),
      { numRuns: 500 },
    );
  });
});

describe('DEVICE_CONNECTIONS_PER_IP over real sockets', () => {
  const engine = testEngines()[0]!;
  let server: TestServer;
  let owner: TestLogin;
  const ports = { teltonika: 0, gt06: 0, osmand: 0 };

  before(async () => {
    server = await startTestServer(engine, { DEVICE_CONNECTIONS_PER_IP: '2' });
    owner = await server.login({ email: 'connections-owner@example.com' });
    const ingestion = server.tracking!.ingestion;
    ports.teltonika = await ingestion.listen('teltonika', 0);
    ports.gt06 = await ingestion.listen('gt06', 0);
    ports.osmand = await ingestion.listen('osmand', 0);
  });
  after(() => server.dispose());

  it('closes a connection beyond the limit at once, whatever the listener, and admits one again when another closes', async () => {
    await registerDevice(server, owner, '356307042442001');
    await registerDevice(server, owner, '359710049096001');
    await registerDevice(server, owner, 'phone-connections');
    const teltonika = await DeviceConnection.open(ports.teltonika);
    teltonika.write(teltonikaHandshake('356307042442001'));
    assert.deepEqual(await teltonika.read(1), Buffer.from([1]));
    const gt06 = await DeviceConnection.open(ports.gt06);
    gt06.write(gt06Login('359710049096001', 1));
    assert.equal((await gt06.read(10))[3], 0x01);

    const third = await DeviceConnection.open(ports.teltonika);
    third.write(teltonikaHandshake('356307042442001'));
    await third.assertClosed();
    assert.equal(third.unread.length, 0, 'closed before any answer');
    const agent = new Agent({ connections: 1 });
    await assert.rejects(request(`http://127.0.0.1:${ports.osmand}/?${osmAndQuery('phone-connections', fixAt(0))}`, { dispatcher: agent }));

    await gt06.close();
    // The server learns of the close a moment after the client.
    await eventually(async () => {
      try {
        const reply = await request(`http://127.0.0.1:${ports.osmand}/?${osmAndQuery('phone-connections', fixAt(0))}`, { dispatcher: agent });
        await reply.body.dump();
        return reply.statusCode === 200;
      } catch {
        return false;
      }
    }, 'an HTTP connection counts like any other, and fits again once the GT06 one closed');
    await agent.close();
    await teltonika.close();
  });
});
