import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { request } from 'undici';
import { osmAndQuery } from '../../../../src/services/tracking/protocols/osmand/simulator.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';
import { T0, deviceOf, fixAt, latestOf, positionsOf, registerDevice } from './support.ts';

describeEachEngine('OsmAnd listener (Traccar Client), end to end', (engine) => {
  let server: TestServer;
  let owner: TestLogin;
  let base: string;

  before(async () => {
    server = await startTestServer(engine);
    owner = await server.login({ email: 'osmand-owner@example.com' });
    base = `http://127.0.0.1:${await server.tracking!.ingestion.listen('osmand', 0)}`;
  });
  after(() => server.dispose());

  const send = async (path: string, init: { method?: 'GET' | 'POST'; body?: string; contentType?: string } = {}) => {
    const response = await request(`${base}${path}`, {
      method: init.method ?? 'GET',
      ...(init.body === undefined ? {} : { body: init.body }),
      headers: init.contentType ? { 'content-type': init.contentType } : {},
    });
    const text = await response.body.text();
    return { status: response.statusCode, body: text ? (JSON.parse(text) as { code?: string }) : undefined };
  };

  it('stores a query-string report and answers 200 once it is durable', async () => {
    const deviceId = await registerDevice(server, owner, 'phone-query');
    const reply = await send(`/?${osmAndQuery('phone-query', fixAt(0, { ignition: true }))}&batt=87`);
    assert.equal(reply.status, 200);
    const [stored] = await positionsOf(server, owner, deviceId);
    assert.equal(stored?.protocol, 'osmand');
    assert.equal(stored?.fixTime, new Date(T0).toISOString());
    assert.equal(stored?.speed, 10, 'query speed is knots as sent');
    assert.deepEqual([stored?.latitude, stored?.longitude, stored?.course], [52.5, 13.4, 90]);
    assert.equal(stored?.attributes.ignition, true);
    assert.equal(stored?.attributes.batteryLevel, 87);
  });

  it('stores a form-encoded POST on any path', async () => {
    const deviceId = await registerDevice(server, owner, 'phone-form');
    const reply = await send('/some/path', { method: 'POST', body: osmAndQuery('phone-form', fixAt(5)), contentType: 'application/x-www-form-urlencoded' });
    assert.equal(reply.status, 200);
    assert.equal((await latestOf(server, owner, deviceId))?.fixTime, fixAt(5).time.toISOString());
  });

  it('stores Traccar Client JSON, converting m/s to knots', async () => {
    const deviceId = await registerDevice(server, owner, 'phone-json');
    const body = JSON.stringify({
      device_id: 'phone-json',
      location: {
        timestamp: new Date(T0 + 60_000).toISOString(),
        coords: { latitude: 48.1, longitude: 11.5, speed: 10, heading: 180, accuracy: 6, altitude: 520 },
        is_moving: true,
        battery: { level: 0.5, is_charging: false },
      },
    });
    const reply = await send('/', { method: 'POST', body, contentType: 'application/json' });
    assert.equal(reply.status, 200);
    const latest = await latestOf(server, owner, deviceId);
    assert.deepEqual([latest?.latitude, latest?.longitude, latest?.course, latest?.altitude], [48.1, 11.5, 180, 520]);
    assert.ok(Math.abs((latest?.speed ?? 0) - 19.438) < 0.001, `${latest?.speed}`);
    assert.deepEqual([latest?.attributes.motion, latest?.attributes.batteryLevel, latest?.attributes.charge], [true, 50, false]);
  });

  it('answers 400 BAD_REQUEST without an id or with a malformed value, and stores nothing', async () => {
    const deviceId = await registerDevice(server, owner, 'phone-bad');
    const cases = [
      send('/?lat=1&lon=2'),
      send('/?id=phone-bad&lat=north&lon=2'),
      send('/?id=phone-bad&lat=95&lon=2'),
      send('/?id=phone-bad&lat=1&lon=2&timestamp=yesterday'),
      send('/', { method: 'POST', body: '{"device_id":', contentType: 'application/json' }),
      send('/', { method: 'POST', body: JSON.stringify({ location: { coords: { latitude: 1, longitude: 2 } } }), contentType: 'application/json' }),
    ];
    for (const reply of await Promise.all(cases)) {
      assert.equal(reply.status, 400);
      assert.equal(reply.body?.code, 'BAD_REQUEST');
    }
    assert.deepEqual(await positionsOf(server, owner, deviceId), []);
  });

  it('refuses overlong and numerous parameters with 400 BAD_REQUEST, storing nothing', async () => {
    const deviceId = await registerDevice(server, owner, 'phone-long');
    const many = Array.from({ length: 101 }, (_, index) => `k${index}=1`).join('&');
    const cases = [
      send(`/?id=phone-long&lat=${'1'.repeat(14_000)}x&lon=2`),
      send('/', { method: 'POST', body: `id=phone-long&lat=1&lon=2&lat=${'1'.repeat(30_000)}x`, contentType: 'application/x-www-form-urlencoded' }),
      send('/', { method: 'POST', body: `id=phone-long&lat=1&lon=2&${many}`, contentType: 'application/x-www-form-urlencoded' }),
      send(`/?id=${'7'.repeat(129)}&lat=1&lon=2`),
    ];
    for (const reply of await Promise.all(cases)) assert.deepEqual([reply.status, reply.body?.code], [400, 'BAD_REQUEST']);
    assert.deepEqual(await positionsOf(server, owner, deviceId, 0, Date.now() + 86_400_000), []);
  });

  it('refuses a value that overflows or a time far ahead with 400, and the device goes on as before', async () => {
    const deviceId = await registerDevice(server, owner, 'phone-poison');
    const far = '8640000000000000';
    const poisons = [
      send(`/?id=phone-poison&lat=52.5&lon=13.4&speed=1e309&timestamp=${far}`),
      send(`/?id=phone-poison&lat=52.5&lon=13.4&timestamp=${far}`),
      send(`/?id=phone-poison&batt=50&timestamp=${far}`),
      send('/', {
        method: 'POST',
        contentType: 'application/json',
        body: JSON.stringify({ device_id: 'phone-poison', location: { timestamp: new Date(T0).toISOString(), coords: { latitude: 52.5, longitude: 13.4, speed: 1e308 } } }),
      }),
    ];
    for (const reply of await Promise.all(poisons)) assert.deepEqual([reply.status, reply.body?.code], [400, 'BAD_REQUEST']);
    const everything = () => positionsOf(server, owner, deviceId, 0, Date.now() + 2 * 86_400_000);
    assert.deepEqual(await everything(), [], 'nothing stored');
    assert.equal(await latestOf(server, owner, deviceId), undefined, 'no latest position, however far ahead');

    assert.equal((await send(`/?${osmAndQuery('phone-poison', fixAt(0))}`)).status, 200);
    assert.equal((await send(`/?id=phone-poison&batt=60&timestamp=${(T0 + 10_000) / 1000}`)).status, 200);
    const stored = await everything();
    assert.deepEqual(stored.map((position) => [position.fixTime, position.attributes.batteryLevel]), [
      [fixAt(0).time.toISOString(), undefined],
      [fixAt(0).time.toISOString(), 60],
    ]);
    assert.equal((await deviceOf(server, owner, deviceId)).positionId, stored[1]?.id);
  });

  it('after its 200 every read of the device shows the report: status, lastUpdate, positionId, latest position', async () => {
    const deviceId = await registerDevice(server, owner, 'phone-read-your-writes');
    let lastUpdate = 0;
    for (let seconds = 0; seconds < 40; seconds++) {
      const reply = await send(`/?${osmAndQuery('phone-read-your-writes', fixAt(seconds))}`);
      assert.equal(reply.status, 200);
      const [device, latest] = await Promise.all([deviceOf(server, owner, deviceId), latestOf(server, owner, deviceId)]);
      assert.equal(device.status, 'online', `report ${seconds}`);
      assert.equal(latest?.fixTime, fixAt(seconds).time.toISOString(), `report ${seconds}`);
      assert.equal(device.positionId, latest?.id, `report ${seconds}`);
      assert.ok(device.lastUpdate !== null && Date.parse(device.lastUpdate) >= lastUpdate, `report ${seconds}`);
      lastUpdate = Date.parse(device.lastUpdate);
    }
  });

  it('answers 404 NOT_FOUND for an unknown or disabled device, and stores nothing', async () => {
    const unknown = await send(`/?${osmAndQuery('phone-nobody', fixAt(0))}`);
    assert.deepEqual([unknown.status, unknown.body?.code], [404, 'NOT_FOUND']);

    const deviceId = await registerDevice(server, owner, 'phone-disabled');
    const disabled = await server.app.inject({ method: 'PUT', url: `/api/devices/${deviceId}`, headers: owner.authorization, payload: { disabled: true } });
    assert.equal(disabled.statusCode, 200);
    const refused = await send(`/?${osmAndQuery('phone-disabled', fixAt(0))}`);
    assert.deepEqual([refused.status, refused.body?.code], [404, 'NOT_FOUND']);
    assert.deepEqual(await positionsOf(server, owner, deviceId), []);
  });

  it('accepts a device created just after its id was refused, and one re-enabled just after it was refused', async () => {
    const refused = await send(`/?${osmAndQuery('phone-late', fixAt(0))}`);
    assert.equal(refused.status, 404);
    const deviceId = await registerDevice(server, owner, 'phone-late');
    assert.equal((await send(`/?${osmAndQuery('phone-late', fixAt(1))}`)).status, 200);

    const disabled = await server.app.inject({ method: 'PUT', url: `/api/devices/${deviceId}`, headers: owner.authorization, payload: { disabled: true } });
    assert.equal(disabled.statusCode, 200);
    assert.equal((await send(`/?${osmAndQuery('phone-late', fixAt(2))}`)).status, 404);
    const enabled = await server.app.inject({ method: 'PUT', url: `/api/devices/${deviceId}`, headers: owner.authorization, payload: { disabled: false } });
    assert.equal(enabled.statusCode, 200);
    assert.equal((await send(`/?${osmAndQuery('phone-late', fixAt(3))}`)).status, 200);
    assert.deepEqual((await positionsOf(server, owner, deviceId)).map((position) => position.fixTime), [fixAt(1), fixAt(3)].map((fix) => fix.time.toISOString()));
  });

  it('answers 413 for a body over the limit', async () => {
    const reply = await send('/', { method: 'POST', body: `id=phone-big&x=${'a'.repeat(70 * 1024)}`, contentType: 'application/x-www-form-urlencoded' });
    assert.equal(reply.status, 413);
  });

  it('stores a report without a location at the last known fix, with its own attributes', async () => {
    const deviceId = await registerDevice(server, owner, 'phone-status');
    assert.equal((await send(`/?${osmAndQuery('phone-status', fixAt(10))}`)).status, 200);
    assert.equal((await send(`/?id=phone-status&batt=12&timestamp=${(T0 + 30_000) / 1000}`)).status, 200);
    const [fix, status] = await positionsOf(server, owner, deviceId);
    assert.ok(fix && status);
    assert.deepEqual(
      [status.fixTime, status.latitude, status.longitude, status.speed, status.valid],
      [fix.fixTime, fix.latitude, fix.longitude, fix.speed, fix.valid],
      'the last fix, copied',
    );
    assert.equal(status.deviceTime, new Date(T0 + 30_000).toISOString());
    assert.deepEqual(status.attributes, { batteryLevel: 12 });
    assert.equal((await latestOf(server, owner, deviceId))?.id, status.id, 'a report at the same fix time becomes the latest');
  });

  it('stores no first report without a location, before any fix (Traccar would store it at 0,0 in 1970), but hears the device', async () => {
    const deviceId = await registerDevice(server, owner, 'phone-no-fix');
    assert.equal((await send('/?id=phone-no-fix&batt=40')).status, 200);
    assert.deepEqual(await positionsOf(server, owner, deviceId, 0, Date.now() + 86_400_000), []);
    assert.equal((await deviceOf(server, owner, deviceId)).status, 'online');
  });
});
