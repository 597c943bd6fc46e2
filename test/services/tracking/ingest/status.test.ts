import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { request } from 'undici';
import { EventBus } from '../../../../src/platform/bus.ts';
import { createDevicesModule } from '../../../../src/services/devices/module.ts';
import { createTrackingModule } from '../../../../src/services/tracking/module.ts';
import { osmAndQuery } from '../../../../src/services/tracking/protocols/osmand/simulator.ts';
import { teltonikaAvlPacket, teltonikaHandshake } from '../../../../src/services/tracking/protocols/teltonika/simulator.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { instanceContext, startTestServer } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';
import { DeviceConnection, deviceOf, eventsOf, fixAt, registerDevice, waitFor } from './support.ts';

// One second: the smallest STATUS_TIMEOUT, so that "unknown" and the idle timeout come within a test.
const SHORT_STATUS_TIMEOUT = '1';

describeEachEngine('device status through ingestion', (engine) => {
  let server: TestServer;
  let owner: TestLogin;
  let teltonika: number;

  before(async () => {
    server = await startTestServer(engine);
    owner = await server.login({ email: 'status-owner@example.com' });
    teltonika = await server.tracking!.ingestion.listen('teltonika', 0);
  });
  after(() => server.dispose());

  const settled = () => server.tracking!.ingestion.pipeline.settled();
  const typesOf = async (deviceId: number) => (await eventsOf(server, owner, deviceId)).map((event) => event.type);

  it('starts offline; online on the first message (login included), with lastUpdate; offline when the connection closes', async () => {
    const deviceId = await registerDevice(server, owner, '356307042442001');
    assert.deepEqual(await deviceOf(server, owner, deviceId), { ...(await deviceOf(server, owner, deviceId)), status: 'offline', lastUpdate: null, positionId: null });

    const before = Date.now();
    const connection = await DeviceConnection.open(teltonika);
    connection.write(teltonikaHandshake('356307042442001'));
    await connection.read(1);
    // The login reply goes out before the login is handed on: wait for its status.
    const online = await waitFor(() => deviceOf(server, owner, deviceId), (device) => device.status === 'online', 'online');
    assert.ok(Date.parse(online.lastUpdate ?? '') >= before, 'lastUpdate is when the message arrived');
    assert.equal(online.positionId, null, 'a login carries no position');

    connection.write(teltonikaAvlPacket([fixAt(0)]));
    await connection.read(4);
    await settled();
    const [event] = await eventsOf(server, owner, deviceId);
    const withPosition = await deviceOf(server, owner, deviceId);
    assert.ok(withPosition.positionId !== null, 'positionId is the latest position');
    assert.equal(event?.type, 'deviceOnline');
    assert.equal(event?.positionId, null);

    await connection.close();
    await waitFor(() => deviceOf(server, owner, deviceId), (device) => device.status === 'offline', 'offline');
    await settled();
    assert.deepEqual(await typesOf(deviceId), ['deviceOnline', 'deviceOffline']);
  });

  it('stays online while a second connection of the device is open', async () => {
    const deviceId = await registerDevice(server, owner, '356307042442002');
    const first = await DeviceConnection.open(teltonika);
    first.write(teltonikaHandshake('356307042442002'));
    await first.read(1);
    const second = await DeviceConnection.open(teltonika);
    second.write(teltonikaHandshake('356307042442002'));
    await second.read(1);
    await waitFor(() => deviceOf(server, owner, deviceId), (device) => device.status === 'online', 'online');
    await first.close();
    await settled();
    assert.equal((await deviceOf(server, owner, deviceId)).status, 'online');
    await second.close();
    await waitFor(() => deviceOf(server, owner, deviceId), (device) => device.status === 'offline', 'offline');
  });
});

describeEachEngine(`device status through ingestion, STATUS_TIMEOUT=${SHORT_STATUS_TIMEOUT}`, (engine) => {
  let server: TestServer;
  let owner: TestLogin;
  let teltonika: number;
  let osmand: string;

  before(async () => {
    server = await startTestServer(engine, { STATUS_TIMEOUT: SHORT_STATUS_TIMEOUT });
    owner = await server.login({ email: 'status-owner@example.com' });
    teltonika = await server.tracking!.ingestion.listen('teltonika', 0);
    osmand = `http://127.0.0.1:${await server.tracking!.ingestion.listen('osmand', 0)}`;
  });
  after(() => server.dispose());

  const settled = () => server.tracking!.ingestion.pipeline.settled();
  const typesOf = async (deviceId: number) => (await eventsOf(server, owner, deviceId)).map((event) => event.type);

  it('closes a TCP connection silent for STATUS_TIMEOUT: the device goes offline', async () => {
    const deviceId = await registerDevice(server, owner, '356307042442003');
    const connection = await DeviceConnection.open(teltonika);
    connection.write(teltonikaHandshake('356307042442003'));
    await connection.read(1);
    await connection.assertClosed(3000);
    await waitFor(() => deviceOf(server, owner, deviceId), (device) => device.status === 'offline', 'offline');
    await settled();
    // The sweep may notice the silence a moment before the connection is closed.
    const types = (await typesOf(deviceId)).filter((type) => type !== 'deviceUnknown');
    assert.deepEqual(types, ['deviceOnline', 'deviceOffline']);
  });

  it('becomes unknown after STATUS_TIMEOUT without a message (HTTP devices have no connection to close), online again on the next', async () => {
    const deviceId = await registerDevice(server, owner, 'status-phone');
    const report = async (seconds: number) => {
      const response = await request(`${osmand}/?${osmAndQuery('status-phone', fixAt(seconds))}`);
      await response.body.dump();
      assert.equal(response.statusCode, 200);
    };
    await report(0);
    await settled();
    assert.equal((await deviceOf(server, owner, deviceId)).status, 'online');
    await waitFor(() => deviceOf(server, owner, deviceId), (device) => device.status === 'unknown', 'unknown', 4000);
    await report(1);
    await settled();
    assert.equal((await deviceOf(server, owner, deviceId)).status, 'online');
    assert.deepEqual(await typesOf(deviceId), ['deviceOnline', 'deviceUnknown', 'deviceOnline']);
  });

  it('after a restart, a device the previous run left online times out even if it never sends again', async () => {
    const deviceId = await registerDevice(server, owner, 'status-restart');
    const response = await request(`${osmand}/?${osmAndQuery('status-restart', fixAt(0))}`);
    await response.body.dump();
    await settled();
    assert.equal((await deviceOf(server, owner, deviceId)).status, 'online');

    // A second tracking module on the same database stands for the next run of the process.
    const ctx = instanceContext(server, new EventBus(server.app.log));
    const devices = await createDevicesModule(ctx, { users: server.auth!.api.users });
    // What Redis does between processes: the server's device caches hear of the change.
    ctx.bus.on('devices.device.updated', (event) => server.bus.publish('devices.device.updated', event));
    const nextRun = await createTrackingModule(ctx, { devices: devices.api, users: server.auth!.api.users });
    // This run must not time the device out itself: its pipeline no longer hears of it.
    server.tracking!.ingestion.pipeline.forgetDevice(deviceId).catch(() => undefined);
    try {
      await nextRun.start?.();
      await waitFor(() => deviceOf(server, owner, deviceId), (device) => device.status === 'unknown', 'unknown', 4000);
      await nextRun.ingestion.pipeline.settled();
      assert.deepEqual(await typesOf(deviceId), ['deviceOnline', 'deviceUnknown']);
    } finally {
      await nextRun.stop?.();
      await devices.stop?.();
    }
  });
});
