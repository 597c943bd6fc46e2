import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import { request } from 'undici';
import type { NewEvent, NewPosition } from '../../../../src/services/tracking/api.ts';
import type { LiveEvent, LivePosition } from '../../../../src/services/tracking/domain-events.ts';
import { osmAndQuery } from '../../../../src/services/tracking/protocols/osmand/simulator.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { eventually } from '../../../support/eventually.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestServer } from '../../../support/server.ts';
import { fixAt } from '../ingest/support.ts';
import { signIn } from '../../../support/api.ts';
import { T0, position } from '../../../factories/position.ts';
import { createDevice, get, share } from '../support/tracking.ts';
import type { SignedIn } from '../../../support/api.ts';
import { LiveClient, bareUpgrade, bearer, refusal, socketUrl, tunedInstance } from './support.ts';
import type { LiveMessage } from './support.ts';

const idsOf = (items: { id: number }[] | undefined) => (items ?? []).map((item) => item.id);

describeEachEngine('live updates over /api/socket', (engine) => {
  let server: TestServer;
  let url: string;
  let owner: SignedIn;
  let eventsOnly: SignedIn;
  let stranger: SignedIn;
  let first: number;
  let second: number;
  let strangers: number;
  let open: LiveClient[] = [];
  /** Who reads a stored position back, by device (the owner's devices need no entry). */
  const readers = new Map<number, SignedIn>();

  /** Stores positions and answers them as ingestion puts them on the bus: each device's id and the API's Position JSON. */
  async function stored(batch: NewPosition[]): Promise<LivePosition[]> {
    assert.ok(server.tracking);
    const ids = await server.tracking.api.storePositions(batch);
    const live: LivePosition[] = [];
    for (const [index, id] of ids.entries()) {
      const deviceId = (batch[index] as NewPosition).deviceId;
      const response = await get(server, `/api/positions?id=${id}`, readers.get(deviceId) ?? owner);
      assert.equal(response.statusCode, 200, response.body);
      live.push({ deviceId, json: JSON.stringify((response.json() as unknown[])[0]) });
    }
    return live;
  }

  async function storedEvents(batch: NewEvent[]): Promise<LiveEvent[]> {
    assert.ok(server.tracking);
    const ids = await server.tracking.api.storeEvents(batch);
    const live: LiveEvent[] = [];
    for (const [index, id] of ids.entries()) {
      const deviceId = (batch[index] as NewEvent).deviceId;
      const response = await get(server, `/api/events/${id}`, readers.get(deviceId) ?? owner);
      assert.equal(response.statusCode, 200, response.body);
      live.push({ deviceId, json: response.body });
    }
    return live;
  }

  async function connect(user: SignedIn, target = url): Promise<LiveClient> {
    const client = await LiveClient.open(target, bearer(user));
    open.push(client);
    return client;
  }

  /**
   * Publishes a position of `marker` (a device the client's user may see) and answers what the
   * socket got before it: the proof of what it was not sent.
   */
  async function beforeMarker(client: LiveClient, marker = strangers): Promise<LiveMessage[]> {
    const [live] = await stored([position(marker, 60_000)]);
    assert.ok(live);
    await server.bus.publish('tracking.positions.stored', { positions: [live] });
    const markerId = (JSON.parse(live.json) as { id: number }).id;
    return (await client.until((message) => idsOf(message.positions).includes(markerId))).before;
  }

  /** Of the messages, the ids of devices named anywhere: positions, events and devices alike. */
  function devicesNamed(messages: LiveMessage[]): Set<number> {
    const named = new Set<number>();
    for (const message of messages) {
      for (const item of [...(message.positions ?? []), ...(message.events ?? [])]) named.add(item.deviceId);
      for (const device of message.devices ?? []) named.add(device.id);
    }
    return named;
  }

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off' });
    url = await socketUrl(server.app);
    owner = await signIn(server, 'live-owner@example.com');
    eventsOnly = await signIn(server, 'live-events@example.com');
    stranger = await signIn(server, 'live-stranger@example.com');
    first = await createDevice(server, owner, 'live-1');
    second = await createDevice(server, owner, 'live-2');
    strangers = await createDevice(server, stranger, 'live-3');
    readers.set(strangers, stranger);
    await share(server, owner, first, eventsOnly.email, { events: true });
    await stored([position(first, 0), position(second, 1_000), position(first, 2_000)]);
  });
  afterEach(async () => {
    for (const client of open) client.close();
    await Promise.all(open.map((client) => client.closed));
    open = [];
  });
  after(() => server.dispose());

  describe('connecting', () => {
    it('sends the latest position of each visible device first, as GET /api/positions does', async () => {
      const expected = (await get(server, '/api/positions', owner)).json() as { deviceId: number }[];
      assert.deepEqual(
        expected.map((item) => item.deviceId),
        [first, second],
      );
      const client = await connect(owner);
      assert.deepEqual(await client.next(), { positions: expected });
    });

    it('accepts the access_token cookie and ?token=', async () => {
      const expected = { positions: (await get(server, '/api/positions', owner)).json() };
      const byCookie = await LiveClient.open(url, { headers: { cookie: `access_token=${owner.token}` } });
      const byQuery = await LiveClient.open(`${url}?token=${encodeURIComponent(owner.token)}`);
      open.push(byCookie, byQuery);
      assert.deepEqual(await byCookie.next(), expected);
      assert.deepEqual(await byQuery.next(), expected);
    });

    it('sends an empty list to a user who may see no positions', async () => {
      assert.deepEqual(await (await connect(eventsOnly)).next(), { positions: [] });
    });

    it('refuses an upgrade without a token or with a bad one, before upgrading (401)', async () => {
      const missing = await refusal(url);
      assert.equal(missing.status, 401);
      assert.equal(missing.body.code, 'UNAUTHORIZED');
      const bad = await refusal(url, { headers: { authorization: 'Bearer not-a-token' } });
      assert.equal(bad.status, 401);
      assert.equal(bad.body.code, 'INVALID_TOKEN');
      const badQuery = await refusal(`${url}?token=not-a-token`);
      assert.equal(badQuery.status, 401);
      assert.equal(badQuery.body.code, 'INVALID_TOKEN');
      const badCookie = await refusal(url, { headers: { cookie: 'access_token=not-a-token' } });
      assert.equal(badCookie.status, 401);
      const queryElsewhere = await server.app.inject({ method: 'GET', url: `/api/positions?token=${owner.token}` });
      assert.equal(queryElsewhere.statusCode, 401, '?token= counts on the socket only');
    });

    it('ends the connection after refusing an upgrade, on the socket and on any other path', async () => {
      for (const target of [url, url.replace('/api/socket', '/api/devices/'), url.replace('/api/socket', '/api/auth/health')]) {
        const refused = await bareUpgrade(target);
        assert.match(refused.statusLine, /^HTTP\/1\.1 (401|200) /, target);
        assert.ok(refused.endedByServer, `${target}: the server ended the connection`);
      }
    });

    it('refuses a cookie-authenticated upgrade from a page of a foreign origin (403)', async () => {
      const headers = { cookie: `access_token=${owner.token}` };
      const foreign = await refusal(url, { headers, origin: 'https://evil.example' });
      assert.equal(foreign.status, 403);
      assert.equal(foreign.body.code, 'FORBIDDEN');
      const own = await LiveClient.open(url, { headers, origin: new URL(server.config.publicUrl).origin });
      open.push(own);
      assert.ok((await own.next() as LiveMessage).positions);
      // A page cannot forge a bearer header, so any origin may use one.
      const withBearer = await LiveClient.open(url, { ...bearer(owner), origin: 'https://app.example' });
      open.push(withBearer);
      assert.ok((await withBearer.next() as LiveMessage).positions);
    });

    it('answers a plain HTTP request with 426 WEBSOCKET_REQUIRED', async () => {
      const response = await get(server, '/api/socket', owner);
      assert.equal(response.statusCode, 426);
      assert.equal(response.json().code, 'WEBSOCKET_REQUIRED');
    });
  });

  describe('live messages', () => {
    it('sends the positions of one bus event as one message per socket, only those the user may see', async () => {
      const ownerSocket = await connect(owner);
      const strangerSocket = await connect(stranger);
      for (const client of [ownerSocket, strangerSocket]) await client.next();

      const batch = await stored([position(first, 10_000), position(strangers, 10_000), position(second, 10_000), position(first, 11_000)]);
      await server.bus.publish('tracking.positions.stored', { positions: batch });

      const parsed = batch.map((item) => JSON.parse(item.json));
      assert.deepEqual(await ownerSocket.nextOf('positions'), [parsed[0], parsed[2], parsed[3]]);
      assert.deepEqual(await strangerSocket.nextOf('positions'), [parsed[1]]);
    });

    it('sends events to users with `events`, and no positions without `position`', async () => {
      const ownerSocket = await connect(owner);
      const eventsSocket = await connect(eventsOnly);
      const strangerSocket = await connect(stranger);
      for (const client of [ownerSocket, eventsSocket, strangerSocket]) await client.next();

      const positions = await stored([position(first, 30_000)]);
      await server.bus.publish('tracking.positions.stored', { positions });
      const [event] = await storedEvents([{ type: 'alarm', eventTime: T0, deviceId: first, attributes: { alarm: 'sos' } }]);
      assert.ok(event);
      await server.bus.publish('tracking.events.created', { events: [event] });

      assert.deepEqual(await ownerSocket.nextOf('events'), [JSON.parse(event.json)]);
      const shared = await eventsSocket.until((message) => message.events !== undefined);
      assert.deepEqual(shared.match, { events: [JSON.parse(event.json)] });
      assert.ok(
        shared.before.every((message) => message.positions === undefined),
        'the shared user lacks `position`',
      );
      const strangerGot = devicesNamed(await beforeMarker(strangerSocket));
      assert.ok(!strangerGot.has(first) && !strangerGot.has(second), 'nothing of devices the stranger cannot see');
    });

    it('sends devices whose status changed, as each user sees them', async () => {
      const ownerSocket = await connect(owner);
      const eventsSocket = await connect(eventsOnly);
      const strangerSocket = await connect(stranger);
      for (const client of [ownerSocket, eventsSocket, strangerSocket]) await client.next();

      assert.ok(server.devices);
      assert.equal(await server.devices.api.updateStatus(first, { status: 'online' }), true);

      const isOnline = (message: LiveMessage) => message.devices?.some((device) => device.id === first && device.status === 'online') === true;
      const ownView = (await ownerSocket.until(isOnline)).match.devices;
      assert.deepEqual(ownView, [(await get(server, `/api/devices/${first}`, owner)).json()]);
      const sharedView = (await eventsSocket.until(isOnline)).match.devices;
      assert.deepEqual(sharedView, [(await get(server, `/api/devices/${first}`, eventsOnly)).json()]);
      assert.equal(sharedView?.[0]?.isOwner, false);
      assert.deepEqual(sharedView?.[0]?.permissions, { position: false, events: true, geofences: false, notifications: false, commands: false });

      const strangerGot = devicesNamed(await beforeMarker(strangerSocket));
      assert.ok(!strangerGot.has(first), 'no device the stranger cannot see');
    });

    it('stops sending a deleted device', async () => {
      const doomed = await createDevice(server, stranger, 'live-doomed');
      readers.set(doomed, stranger);
      const [doomedPosition] = await stored([position(doomed, 0)]);
      assert.ok(doomedPosition);
      const client = await connect(stranger);
      assert.deepEqual((await client.next() as LiveMessage).positions?.map((item) => item.deviceId), [strangers, doomed]);

      const response = await server.app.inject({ method: 'DELETE', url: `/api/devices/${doomed}`, headers: stranger.authorization });
      assert.equal(response.statusCode, 204, response.body);
      await server.bus.publish('tracking.positions.stored', { positions: [doomedPosition] });
      assert.ok(!devicesNamed(await beforeMarker(client)).has(doomed));
    });

    it('follows sharing at once: a new share sends the device, then its positions; a removed one stops them', async () => {
      const newcomer = await signIn(server, 'live-newcomer@example.com');
      const own = await createDevice(server, newcomer, 'live-newcomer');
      readers.set(own, newcomer);
      const client = await connect(newcomer);
      assert.deepEqual(await client.next(), { positions: [] });

      await share(server, stranger, strangers, newcomer.email, { position: true });
      const gained = await client.nextOf('devices');
      assert.deepEqual(gained, [(await get(server, `/api/devices/${strangers}`, newcomer)).json()]);
      const positions = await stored([position(strangers, 70_000)]);
      await server.bus.publish('tracking.positions.stored', { positions });
      assert.deepEqual(await client.nextOf('positions'), [JSON.parse((positions[0] as LivePosition).json)]);

      const removed = await server.app.inject({ method: 'DELETE', url: `/api/devices/${strangers}/shares/${newcomer.userId}`, headers: stranger.authorization });
      assert.equal(removed.statusCode, 204, removed.body);
      // The removal is announced on the bus before the answer; the socket's access is read again right after.
      await eventually(async () => {
        const later = await stored([position(strangers, 80_000)]);
        await server.bus.publish('tracking.positions.stored', { positions: later });
        return !devicesNamed(await beforeMarker(client, own)).has(strangers);
      }, 'the removed share stops the positions');
    });

    it('gives every socket of a user the same messages', async () => {
      const sockets = [await connect(stranger), await connect(stranger), await connect(stranger)];
      for (const client of sockets) await client.next();
      const positions = await stored([position(strangers, 40_000)]);
      await server.bus.publish('tracking.positions.stored', { positions });
      for (const client of sockets) assert.deepEqual(await client.nextOf('positions'), [JSON.parse((positions[0] as LivePosition).json)]);
    });
  });

  describe('through ingestion', () => {
    it('an OsmAnd report reaches the owner’s socket as a position and the device as online, and no one else’s', async () => {
      assert.ok(server.tracking);
      const port = await server.tracking.ingestion.listen('osmand', 0);
      const phone = await createDevice(server, owner, 'live-phone');
      const ownerSocket = await connect(owner);
      const strangerSocket = await connect(stranger);
      await ownerSocket.next();
      await strangerSocket.next();

      const response = await request(`http://127.0.0.1:${port}/?${osmAndQuery('live-phone', fixAt(0, { latitude: 48.85, longitude: 2.35 }))}`);
      await response.body.dump();
      assert.equal(response.statusCode, 200);

      const latest = (await get(server, `/api/positions?deviceId=${phone}`, owner)).json() as { latitude: number }[];
      assert.equal(latest[0]?.latitude, 48.85);
      // Positions, the device's status and its deviceOnline event come as separate messages, in no fixed order.
      let positions: LiveMessage['positions'];
      let devices: LiveMessage['devices'];
      while (!positions || !devices) {
        const message = (await ownerSocket.next()) as LiveMessage;
        if (message.positions) positions = message.positions;
        if (message.devices?.some((device) => device.id === phone && device.status === 'online')) devices = message.devices;
      }
      assert.deepEqual(positions, latest);
      assert.deepEqual(devices, [(await get(server, `/api/devices/${phone}`, owner)).json()]);
      await server.tracking.ingestion.pipeline.settled();
      assert.ok(!devicesNamed(await beforeMarker(strangerSocket)).has(phone));
    });
  });

  describe('closing', () => {
    it('closes the sockets of a revoked session with 4401 and leaves the user’s other sessions open', async () => {
      const other = await signIn(server, stranger.email);
      const revoked = await connect(stranger);
      const kept = await connect(other);
      await revoked.next();
      await kept.next();

      const logout = await server.app.inject({ method: 'DELETE', url: '/api/auth/logout', headers: stranger.authorization });
      assert.equal(logout.statusCode, 204, logout.body);
      assert.deepEqual(await revoked.waitClosed(), { code: 4401, reason: 'session revoked' });
      stranger = other;
      readers.set(strangers, other);

      const positions = await stored([position(strangers, 50_000)]);
      await server.bus.publish('tracking.positions.stored', { positions });
      assert.deepEqual(await kept.nextOf('positions'), [JSON.parse((positions[0] as LivePosition).json)]);
    });

    it('closes with 1001 when the server shuts down', async () => {
      const own = await startTestServer(engine);
      const user = await own.login({ email: 'live-shutdown@example.com' });
      const client = await LiveClient.open(await socketUrl(own.app), bearer(user));
      await client.next();
      const disposed = own.dispose();
      assert.deepEqual(await client.waitClosed(), { code: 1001, reason: 'server shutting down' });
      await disposed;
    });

    it('closes with 4401 when the access token that opened it expires', async () => {
      const own = await startTestServer(engine, { ACCESS_TOKEN_TTL: '2' });
      try {
        const user = await own.login({ email: 'live-expiry@example.com' });
        const client = await LiveClient.open(await socketUrl(own.app), bearer(user));
        assert.deepEqual(await client.next(), { positions: [] });
        assert.deepEqual(await client.waitClosed(), { code: 4401, reason: 'token expired' });
      } finally {
        await own.dispose();
      }
    });
  });

  describe('tuning (another instance on the same bus, with its own options)', () => {
    it('sends {} every keepaliveMs', async () => {
      const instance = await tunedInstance(server, { keepaliveMs: 30 });
      try {
        const client = await connect(stranger, instance.url);
        assert.ok((await client.next() as LiveMessage).positions);
        assert.deepEqual(await client.next(), {});
        assert.deepEqual(await client.next(), {});
      } finally {
        await instance.close();
      }
    });

    it('refuses a socket beyond maxSocketsPerUser with 429, and takes one again once a socket closed', async () => {
      const instance = await tunedInstance(server, { maxSocketsPerUser: 1 });
      try {
        const client = await LiveClient.open(instance.url, bearer(stranger));
        await client.next();
        const refused = await refusal(instance.url, bearer(stranger));
        assert.equal(refused.status, 429);
        assert.equal(refused.body.code, 'RATE_LIMITED');
        client.close();
        await client.closed;
        let again: LiveClient | undefined;
        await eventually(async () => {
          again = await LiveClient.open(instance.url, bearer(stranger)).catch(() => undefined);
          return again !== undefined;
        }, 'a closed socket frees its place');
        if (again) open.push(again);
      } finally {
        await instance.close();
      }
    });

    it('closes a client that does not read with 4408 once maxBufferedBytes wait to be sent', async () => {
      const instance = await tunedInstance(server, { maxBufferedBytes: 64 * 1024 });
      try {
        const client = await connect(stranger, instance.url);
        await client.next();
        // The client stops reading: the kernel buffers fill, then the server's own queue.
        const raw = (client.socket as unknown as { _socket: Socket })._socket;
        raw.pause();
        // 32 MB in all: more than loopback's kernel buffers on both sides hold, so the server's own queue grows.
        const bulky: LivePosition = { deviceId: strangers, json: JSON.stringify({ id: 1, deviceId: strangers, attributes: { filler: 'x'.repeat(32 * 1024) } }) };
        for (let round = 0; round < 1_000; round++) {
          await server.bus.publish('tracking.positions.stored', { positions: [bulky] });
          if (round % 50 === 49) await new Promise((resolve) => setImmediate(resolve));
        }
        raw.resume();
        assert.deepEqual(await client.waitClosed(), { code: 4408, reason: 'slow consumer' });
      } finally {
        await instance.close();
      }
    });
  });
});
