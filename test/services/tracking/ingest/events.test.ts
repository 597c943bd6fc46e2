import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { request } from 'undici';
import type { DevicesUpdated } from '../../../../src/services/devices/events.ts';
import type { LiveEvent, LivePosition } from '../../../../src/services/tracking/domain-events.ts';
import type { DeviceFix } from '../../../../src/services/tracking/protocols/simulated-tracker.ts';
import { gt06Location, gt06Login } from '../../../../src/services/tracking/protocols/gt06/simulator.ts';
import { osmAndQuery } from '../../../../src/services/tracking/protocols/osmand/simulator.ts';
import { teltonikaAvlPacket, teltonikaHandshake } from '../../../../src/services/tracking/protocols/teltonika/simulator.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';
import { SkippingClock } from '../support/fake-clock.ts';
import { DeviceConnection, T0, eventsOf, fixAt, positionsOf, registerDevice } from './support.ts';
import type { EventJson } from './support.ts';

/** Events raised through the whole pipeline: decoded, stored, processed by the engine, stored, readable and published. */
describeEachEngine('events raised by ingestion', (engine) => {
  let server: TestServer;
  let owner: TestLogin;
  let teltonika: number;
  let gt06: number;
  let osmand: string;
  const published = { positions: [] as LivePosition[], events: [] as LiveEvent[], devices: [] as number[] };
  const clock = new SkippingClock();

  before(async () => {
    // A server-wide default every device without its own speedLimit gets.
    server = await startTestServer(engine, { EVENT_DEFAULTS: 'speedLimit=100, minimalTripDistance=200' }, { trackingClock: clock });
    owner = await server.login({ email: 'events-owner@example.com' });
    teltonika = await server.tracking!.ingestion.listen('teltonika', 0);
    gt06 = await server.tracking!.ingestion.listen('gt06', 0);
    osmand = `http://127.0.0.1:${await server.tracking!.ingestion.listen('osmand', 0)}`;
    server.bus.on('tracking.positions.stored', ({ positions }) => {
      published.positions.push(...positions);
    });
    server.bus.on('tracking.events.created', ({ events }) => {
      published.events.push(...events);
    });
    server.bus.on('devices.device.updated', ({ deviceIds }: DevicesUpdated) => {
      published.devices.push(...deviceIds);
    });
  });
  after(() => server.dispose());

  const settled = () => server.tracking!.ingestion.pipeline.settled();
  /** Events of the device raised by positions (status events left out). */
  const positionEvents = async (deviceId: number): Promise<EventJson[]> =>
    (await eventsOf(server, owner, deviceId, T0 - 3_600_000, T0 + 86_400_000)).filter((event) => event.positionId !== null);

  /** A Teltonika tracker that is logged in; send() resolves once its packet is acknowledged. */
  async function teltonikaDevice(imei: string, attributes: Record<string, unknown> = {}) {
    const deviceId = await registerDevice(server, owner, imei, attributes);
    const connection = await DeviceConnection.open(teltonika);
    connection.write(teltonikaHandshake(imei));
    assert.deepEqual(await connection.read(1), Buffer.from([1]));
    return {
      deviceId,
      async send(...fixes: DeviceFix[]) {
        connection.write(teltonikaAvlPacket(fixes));
        await connection.read(4);
      },
      close: () => connection.close(),
    };
  }

  it('deviceOverspeed from the device speedLimit attribute, carrying the position that raised it', async () => {
    const tracker = await teltonikaDevice('356307042443001', { speedLimit: 30 });
    await tracker.send(fixAt(0, { speed: 20 }), fixAt(10, { speed: 40 }), fixAt(20, { speed: 45 }));
    await settled();
    const positions = await positionsOf(server, owner, tracker.deviceId);
    const events = await positionEvents(tracker.deviceId);
    assert.deepEqual(events.map((event) => [event.type, event.positionId]), [['deviceOverspeed', positions[1]?.id]], 'one event per episode');
    assert.equal(events[0]?.eventTime, fixAt(10).time.toISOString());
    assert.equal(events[0]?.attributes.speedLimit, 30);
    await tracker.close();
  });

  it('the server-wide default (EVENT_DEFAULTS) applies to a device without its own threshold', async () => {
    const tracker = await teltonikaDevice('356307042443002');
    await tracker.send(fixAt(0, { speed: 90 }), fixAt(10, { speed: 110 }));
    await settled();
    assert.deepEqual((await positionEvents(tracker.deviceId)).map((event) => [event.type, event.attributes.speedLimit]), [['deviceOverspeed', 100]]);
    await tracker.close();
  });

  it('geofenceEnter and geofenceExit, and the geofence speed limit wins inside', async () => {
    const created = await server.app.inject({
      method: 'POST',
      url: '/api/geofences/',
      headers: owner.authorization,
      payload: { name: 'School zone', area: 'CIRCLE (52.5 13.5, 200)', attributes: { speedLimit: 15 } },
    });
    assert.equal(created.statusCode, 201, created.body);
    const geofenceId = created.json().id as number;
    const tracker = await teltonikaDevice('356307042443003', { speedLimit: 60 });
    const at = (seconds: number, longitude: number, speed: number) => fixAt(seconds, { longitude, speed });
    await tracker.send(at(0, 13.49, 20), at(10, 13.5, 20), at(20, 13.5, 10), at(30, 13.52, 20));
    await settled();
    const positions = await positionsOf(server, owner, tracker.deviceId);
    const events = await positionEvents(tracker.deviceId);
    assert.deepEqual(
      events.map((event) => [event.type, event.positionId, event.geofenceId]),
      [
        ['deviceOverspeed', positions[1]?.id, geofenceId],
        ['deviceMoving', positions[1]?.id, null],
        ['geofenceEnter', positions[1]?.id, geofenceId],
        ['geofenceExit', positions[3]?.id, geofenceId],
      ],
    );
    assert.equal(events[0]?.attributes.speedLimit, 15);
    await tracker.close();
  });

  it('alarm, ignitionOn/Off and deviceMoving from the attributes the protocols decode', async () => {
    const tracker = await teltonikaDevice('356307042443004');
    await tracker.send(
      fixAt(0, { ignition: false, speed: 0, motion: false }),
      fixAt(10, { ignition: true, motion: true, speed: 20 }),
      fixAt(20, { ignition: true, motion: true, speed: 20, sos: true }),
      fixAt(30, { ignition: true, motion: true, speed: 20, sos: true }),
    );
    // 0.0001° of longitude is 6.8 m here: far enough apart for minimalTripDistance=200.
    await tracker.send(fixAt(40, { ignition: false, motion: true, speed: 20, longitude: 13.45 }));
    await settled();
    const events = await positionEvents(tracker.deviceId);
    assert.deepEqual(
      events.map((event) => [event.type, event.attributes.alarm ?? null]),
      [
        ['ignitionOn', null],
        ['alarm', 'general'],
        ['deviceMoving', null],
        ['ignitionOff', null],
      ],
      'the repeated alarm fires once',
    );
    await tracker.close();
  });

  it('GT06 SOS raises an alarm', async () => {
    const deviceId = await registerDevice(server, owner, '359710049096001');
    const connection = await DeviceConnection.open(gt06);
    connection.write(gt06Login('359710049096001', 1));
    await connection.read(10);
    connection.write(gt06Location(fixAt(0, { sos: true }), 2));
    await connection.read(10);
    await settled();
    assert.deepEqual((await positionEvents(deviceId)).map((event) => [event.type, event.attributes.alarm]), [['alarm', 'sos']]);
    await connection.close();
  });

  it('an out-of-order position is stored but raises nothing and is not published live', async () => {
    const tracker = await teltonikaDevice('356307042443005', { speedLimit: 30 });
    await tracker.send(fixAt(100, { speed: 10 }));
    await tracker.send(fixAt(50, { speed: 80, sos: true, ignition: true }));
    await settled();
    const [late] = (await positionsOf(server, owner, tracker.deviceId)).filter((position) => position.fixTime === fixAt(50).time.toISOString());
    assert.ok(late, 'stored');
    assert.deepEqual(await positionEvents(tracker.deviceId), []);
    assert.equal(published.positions.filter((position) => position.deviceId === tracker.deviceId).length, 1);
    assert.ok(!published.positions.some((position) => JSON.parse(position.json).id === late.id));
    await tracker.close();
  });

  it('a report without a location raises its events on the copy of the last fix', async () => {
    const deviceId = await registerDevice(server, owner, 'events-phone');
    const send = async (query: string) => {
      const response = await request(`${osmand}/?${query}`);
      await response.body.dump();
      assert.equal(response.statusCode, 200);
    };
    await send(osmAndQuery('events-phone', fixAt(0)));
    await send(`id=events-phone&alarm=powerCut&timestamp=${(T0 + 5000) / 1000}`);
    await settled();
    const positions = await positionsOf(server, owner, deviceId);
    const events = await positionEvents(deviceId);
    assert.deepEqual(events.map((event) => [event.type, event.positionId, event.attributes.alarm]), [['alarm', positions[1]?.id, 'powerCut']]);
    assert.equal(events[0]?.eventTime, new Date(T0 + 5000).toISOString(), 'dated with the report’s own time');
  });

  it('deviceInactive once the device is silent for deviceInactivityStart seconds', async () => {
    const deviceId = await registerDevice(server, owner, 'inactive-phone', { deviceInactivityStart: 60 });
    const response = await request(`${osmand}/?${osmAndQuery('inactive-phone', fixAt(0))}`);
    await response.body.dump();
    await settled();
    server.tracking!.ingestion.pipeline.sweep();
    await settled();
    assert.deepEqual((await eventsOf(server, owner, deviceId)).map((event) => event.type), ['deviceOnline'], 'not inactive before its minute is up');
    clock.skip(60_000);
    server.tracking!.ingestion.pipeline.sweep();
    await settled();
    const events = await eventsOf(server, owner, deviceId);
    assert.deepEqual(events.map((event) => event.type), ['deviceOnline', 'deviceInactive']);
    assert.equal(typeof events[1]?.attributes.lastUpdate, 'number');
  });

  it('publishes stored positions and created events as the live contract says, and announces device changes', async () => {
    const tracker = await teltonikaDevice('356307042443006', { speedLimit: 5 });
    await tracker.send(fixAt(0, { speed: 10 }));
    await settled();
    const positions = await positionsOf(server, owner, tracker.deviceId);
    const live = published.positions.filter((position) => position.deviceId === tracker.deviceId);
    assert.deepEqual(live.map((position) => JSON.parse(position.json)), positions, 'the Position JSON the API answers');
    const stored = await eventsOf(server, owner, tracker.deviceId, T0 - 1000);
    const liveEvents = published.events.filter((event) => event.deviceId === tracker.deviceId).map((event) => JSON.parse(event.json));
    assert.deepEqual(liveEvents.sort((a, b) => a.id - b.id), stored.sort((a, b) => a.id - b.id), 'the Event JSON the API answers');
    assert.deepEqual(
      liveEvents.map((event) => event.type).sort(),
      ['deviceOnline', 'deviceOverspeed'],
    );
    assert.ok(published.devices.includes(tracker.deviceId));
    await tracker.close();
  });
});
