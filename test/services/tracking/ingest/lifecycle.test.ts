import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { Kysely } from 'kysely';
import { request } from 'undici';
import { EventBus } from '../../../../src/platform/bus.ts';
import { createDevicesModule } from '../../../../src/services/devices/module.ts';
import { createTrackingModule } from '../../../../src/services/tracking/module.ts';
import { osmAndQuery } from '../../../../src/services/tracking/protocols/osmand/simulator.ts';
import { teltonikaAvlPacket, teltonikaHandshake } from '../../../../src/services/tracking/protocols/teltonika/simulator.ts';
import type { TrackingTables } from '../../../../src/services/tracking/tables.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { instanceContext, startTestServer } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';
import { DeviceConnection, T0, eventsOf, fixAt, registerDevice } from './support.ts';

describeEachEngine('ingestion across deletion and restart', (engine) => {
  let server: TestServer;
  let owner: TestLogin;
  let teltonika: number;

  before(async () => {
    server = await startTestServer(engine);
    owner = await server.login({ email: 'lifecycle-owner@example.com' });
    teltonika = await server.tracking!.ingestion.listen('teltonika', 0);
  });
  after(() => server.dispose());

  const db = () => server.database!.db as Kysely<TrackingTables>;
  const countOf = async (table: 'positions' | 'events', deviceId: number) =>
    Number((await db().selectFrom(table).select((eb) => eb.fn.countAll<number>().as('count')).where('device_id', '=', deviceId).executeTakeFirstOrThrow()).count);

  it('a deleted device is dropped mid-connection and none of its data is left behind', async () => {
    const deviceId = await registerDevice(server, owner, '356307042444001', { speedLimit: 1 });
    const connection = await DeviceConnection.open(teltonika);
    connection.write(teltonikaHandshake('356307042444001'));
    await connection.read(1);
    connection.write(teltonikaAvlPacket([fixAt(0, { speed: 20 })]));
    await connection.read(4);
    const deleted = await server.app.inject({ method: 'DELETE', url: `/api/devices/${deviceId}`, headers: owner.authorization });
    assert.equal(deleted.statusCode, 204, deleted.body);
    connection.write(teltonikaAvlPacket([fixAt(1, { speed: 20 })]));
    await connection.assertClosed();
    await server.tracking!.ingestion.pipeline.settled();
    await server.outbox!.drainNow();
    assert.equal(await countOf('positions', deviceId), 0);
    assert.equal(await countOf('events', deviceId), 0);
  });

  it('after a restart the engine continues from the latest stored position: no second geofenceEnter, an exit on leaving', async () => {
    const created = await server.app.inject({
      method: 'POST',
      url: '/api/geofences/',
      headers: owner.authorization,
      payload: { name: 'Depot', area: 'CIRCLE (52.5 13.6, 500)' },
    });
    assert.equal(created.statusCode, 201, created.body);
    const deviceId = await registerDevice(server, owner, 'restart-phone');
    const osmand = await server.tracking!.ingestion.listen('osmand', 0);
    const report = async (port: number, seconds: number, longitude: number) => {
      const response = await request(`http://127.0.0.1:${port}/?${osmAndQuery('restart-phone', fixAt(seconds, { longitude, speed: 0 }))}`);
      await response.body.dump();
      assert.equal(response.statusCode, 200);
    };
    await report(osmand, 0, 13.6);
    await server.tracking!.ingestion.pipeline.settled();

    // The next run of the process: a tracking module of its own on the same database.
    const ctx = instanceContext(server, new EventBus(server.app.log));
    const devices = await createDevicesModule(ctx, { users: server.auth!.api.users });
    const nextRun = await createTrackingModule(ctx, { devices: devices.api, users: server.auth!.api.users });
    try {
      await nextRun.start?.();
      const port = await nextRun.ingestion.listen('osmand', 0);
      await report(port, 10, 13.6);
      await report(port, 20, 13.7);
      await nextRun.ingestion.pipeline.settled();
    } finally {
      await nextRun.stop?.();
      await devices.stop?.();
    }
    const types = (await eventsOf(server, owner, deviceId, T0 - 1000)).map((event) => event.type);
    assert.deepEqual(types.filter((type) => type.startsWith('geofence')), ['geofenceEnter', 'geofenceExit']);
  });

  it('a shutdown closes the connections without making the devices offline', async () => {
    const deviceId = await registerDevice(server, owner, '356307042444002');
    const ctx = instanceContext(server, new EventBus(server.app.log));
    const devices = await createDevicesModule(ctx, { users: server.auth!.api.users });
    const run = await createTrackingModule(ctx, { devices: devices.api, users: server.auth!.api.users });
    await run.start?.();
    const connection = await DeviceConnection.open(await run.ingestion.listen('teltonika', 0));
    connection.write(teltonikaHandshake('356307042444002'));
    await connection.read(1);
    connection.write(teltonikaAvlPacket([fixAt(0)]));
    await connection.read(4);
    await run.stop?.();
    await connection.assertClosed();
    await devices.stop?.();
    const [device] = await devices.api.getDevices([deviceId]);
    assert.equal(device?.status, 'online');
    assert.deepEqual((await eventsOf(server, owner, deviceId)).map((event) => event.type), ['deviceOnline']);
  });

  it('stopping the module stores everything already accepted and acknowledges it', async () => {
    const deviceId = await registerDevice(server, owner, 'stop-phone');
    const ctx = instanceContext(server, new EventBus(server.app.log));
    const devices = await createDevicesModule(ctx, { users: server.auth!.api.users });
    const run = await createTrackingModule(ctx, { devices: devices.api, users: server.auth!.api.users });
    await run.start?.();
    const port = await run.ingestion.listen('osmand', 0);
    const replies = Array.from({ length: 20 }, (_, index) =>
      request(`http://127.0.0.1:${port}/?${osmAndQuery('stop-phone', fixAt(index))}`).then(
        async (response) => {
          await response.body.dump().catch(() => undefined);
          return response.statusCode;
        },
        // Refused: the listener had closed.
        () => 0,
      ),
    );
    // Stop as soon as the first report is stored: the rest are queued or in flight.
    await new Promise<void>((resolve) => {
      const poll = async () => ((await countOf('positions', deviceId)) > 0 ? resolve() : setTimeout(poll, 1));
      void poll();
    });
    await run.stop?.();
    await devices.stop?.();
    const statuses = await Promise.all(replies);
    assert.equal(await countOf('positions', deviceId), statuses.filter((status) => status === 200).length, 'every 200 is stored');
  });
});
