import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TrackingApi } from '../../../src/services/tracking/api.ts';
import { MAX_AREA_TEXT_LENGTH } from '../../../src/services/tracking/geo/index.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { nestedJson } from '../../support/nested-json.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { assertError, signIn } from '../../support/api.ts';
import { createDevice, get, share, trackingInstance } from './support/tracking.ts';
import type { SignedIn } from '../../support/api.ts';

const BERLIN = { lat: 52.52, lon: 13.405 };

describeEachEngine('tracking geofences', (engine) => {
  let server: TestServer;
  let api: TrackingApi;
  let owner: SignedIn;
  let friend: SignedIn;
  let viewer: SignedIn;
  let stranger: SignedIn;
  let admin: SignedIn;

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off' });
    api = (await trackingInstance(server)).tracking.api;
    owner = await signIn(server, 'owner@example.com');
    friend = await signIn(server, 'friend@example.com');
    viewer = await signIn(server, 'viewer@example.com');
    stranger = await signIn(server, 'stranger@example.com');
    admin = await signIn(server, 'admin@example.com', { administrator: true });
    const device = await createDevice(server, owner, 'geo-1');
    await share(server, owner, device, friend.email, { geofences: true });
    await share(server, owner, device, viewer.email, { position: true, events: true });
  });
  after(() => server.dispose());

  const create = (user: SignedIn, payload: unknown) =>
    server.app.inject({ method: 'POST', url: '/api/geofences/', headers: user.authorization, payload: payload as object });
  const update = (user: SignedIn, id: number, payload: unknown) =>
    server.app.inject({ method: 'PUT', url: `/api/geofences/${id}`, headers: user.authorization, payload: payload as object });
  const remove = (user: SignedIn, id: number) => server.app.inject({ method: 'DELETE', url: `/api/geofences/${id}`, headers: user.authorization });
  const list = (user: SignedIn, query = '') => get(server, `/api/geofences/${query}`, user);
  const namesOf = (response: { json(): unknown }) => (response.json() as { name: string }[]).map((geofence) => geofence.name);
  const stored = async () => Number((await server.database!.db.selectFrom('geofences').select((eb) => eb.fn.countAll().as('count')).executeTakeFirstOrThrow()).count);
  const created = async (user: SignedIn, payload: Record<string, unknown>) => {
    const response = await create(user, payload);
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as { id: number; area: string };
  };

  describe('create and read', () => {
    it('stores the normalised area and answers the Geofence, readable by GET /{id}', async () => {
      const response = await create(owner, { name: 'Home', area: 'circle(52.52   13.405,150)' });
      assert.equal(response.statusCode, 201, response.body);
      const geofence = response.json();
      assert.deepEqual(geofence, { id: geofence.id, name: 'Home', description: null, area: 'CIRCLE (52.52 13.405, 150)', calendarId: null, attributes: {} });
      assert.deepEqual((await get(server, `/api/geofences/${geofence.id}`, owner)).json(), geofence);
    });

    it('takes every kind, with description, calendarId and attributes', async () => {
      const polygon = await created(owner, { name: 'Park', area: 'polygon((52.5 13.3,52.6 13.3,52.6 13.5,52.5 13.3))', description: 'green', calendarId: 3, attributes: { speedLimit: 20 } });
      assert.equal(polygon.area, 'POLYGON ((52.5 13.3, 52.6 13.3, 52.6 13.5, 52.5 13.3))');
      const line = await created(owner, { name: 'Route', area: 'LINESTRING (52.5 13.3, 52.6 13.5)', attributes: { polylineDistance: 40 } });
      assert.equal(line.area, 'LINESTRING (52.5 13.3, 52.6 13.5)');
      const read = (await get(server, `/api/geofences/${polygon.id}`, owner)).json();
      assert.equal(read.description, 'green');
      assert.equal(read.calendarId, 3);
      assert.deepEqual(read.attributes, { speedLimit: 20 });
    });

    for (const [area, message] of [
      ['SQUARE (1 2, 3)', /unknown area kind 'SQUARE'/],
      ['POLYGON ((1 2, 3 4, 5 6, 7 8))', /POLYGON is not closed/],
      ['POLYGON ((1 2, 3 4, 1 2))', /at least 4 points/],
      ['CIRCLE (95 10, 100)', /latitude 95 out of range \[-90, 90\] at character 9/],
      ['CIRCLE (10 190, 100)', /longitude 190 out of range/],
      ['CIRCLE (10 20, -5)', /radius must be > 0/],
      ['CIRCLE (10 20, 100) extra', /unexpected text after the area at character 21/],
      ['LINESTRING (1 2)', /at least 2 points/],
      ['   ', /area text is empty/],
      ['', /area text is empty/],
    ] as const) {
      it(`refuses ${JSON.stringify(area)} with 400 INVALID_AREA saying what and where, storing nothing`, async () => {
        const before = await stored();
        assertError(await create(owner, { name: 'Bad', area }), 400, 'INVALID_AREA', message);
        assert.equal(await stored(), before);
      });
    }

    it('refuses a polylineDistance that is not a number of metres >= 0', async () => {
      const before = await stored();
      assertError(await create(owner, { name: 'Bad', area: 'LINESTRING (1 2, 3 4)', attributes: { polylineDistance: -5 } }), 400, 'INVALID_AREA', /polylineDistance/);
      assertError(await create(owner, { name: 'Bad', area: 'LINESTRING (1 2, 3 4)', attributes: { polylineDistance: '30' } }), 400, 'INVALID_AREA', /polylineDistance/);
      assert.equal(await stored(), before);
    });

    it('refuses bad bodies with 400 VALIDATION_FAILED, storing nothing', async () => {
      const before = await stored();
      const area = 'CIRCLE (1 2, 3)';
      assertError(await create(owner, { area }), 400, 'VALIDATION_FAILED', /name/);
      assertError(await create(owner, { name: 'No area' }), 400, 'VALIDATION_FAILED', /area/);
      assertError(await create(owner, { name: 'x'.repeat(129), area }), 400, 'VALIDATION_FAILED', /name/);
      assertError(await create(owner, { name: '   ', area }), 400, 'VALIDATION_FAILED', /name/);
      assertError(await create(owner, { name: 123, area }), 400, 'VALIDATION_FAILED', /name/);
      assertError(await create(owner, { name: 'n', area: 5 }), 400, 'VALIDATION_FAILED', /area/);
      assertError(await create(owner, { name: 'n', area: 'C'.repeat(MAX_AREA_TEXT_LENGTH + 1) }), 400, 'VALIDATION_FAILED', /area/);
      assertError(await create(owner, { name: 'n', area, ownerId: 5 }), 400, 'VALIDATION_FAILED', /ownerId/);
      assertError(await create(owner, { name: 'n', area, description: 'd'.repeat(513) }), 400, 'VALIDATION_FAILED', /description/);
      assertError(await create(owner, { name: 'n', area, calendarId: 'x' }), 400, 'VALIDATION_FAILED', /calendarId/);
      assertError(await create(owner, { name: 'n', area, attributes: { big: 'x'.repeat(20_000) } }), 400, 'VALIDATION_FAILED', /attributes/);
      assert.equal(await stored(), before);
    });

    it('refuses deep or large attributes on create and update with 400 naming the path, changing nothing', async () => {
      const fence = await created(owner, { name: 'Attributed', area: 'CIRCLE (1 2, 3)', attributes: { keep: 1 } });
      const count = await stored();
      const send = (method: 'POST' | 'PUT', url: string, payload: string) =>
        server.app.inject({ method, url, headers: { ...owner.authorization, 'content-type': 'application/json' }, payload });
      assert.equal((await send('PUT', `/api/geofences/${fence.id}`, `{"attributes":{"keep":1,"deep":${nestedJson(7)}}}`)).statusCode, 200, 'eight levels are allowed');
      const before = (await get(server, `/api/geofences/${fence.id}`, owner)).json();
      for (const [attributes, path] of [
        [`{"attributes":${nestedJson(9)}}`, `/body/attributes${'/a'.repeat(9)}`],
        [`{"attributes":${nestedJson(5000)}}`, `/body/attributes${'/a'.repeat(32)}`],
        [JSON.stringify({ attributes: { big: 'y'.repeat(16_384) } }), '/body/attributes'],
      ] as const) {
        for (const response of [
          await send('POST', '/api/geofences/', `{"name":"n","area":"CIRCLE (1 2, 3)",${attributes.slice(1)}`),
          await send('PUT', `/api/geofences/${fence.id}`, attributes),
        ]) {
          assertError(response, 400, 'VALIDATION_FAILED');
          assert.equal(response.json().details[0].path, path);
        }
      }
      assert.equal(await stored(), count);
      assert.deepEqual((await get(server, `/api/geofences/${fence.id}`, owner)).json(), before);
    });

    it('read-only accounts may not create', async () => {
      const readonly = await signIn(server, 'readonly@example.com');
      const flagged = await server.app.inject({ method: 'PUT', url: `/api/auth/users/${readonly.userId}`, headers: admin.authorization, payload: { readonly: true } });
      assert.equal(flagged.statusCode, 200);
      assertError(await create(readonly, { name: 'n', area: 'CIRCLE (1 2, 3)' }), 403, 'USER_READONLY', /read-only/);
    });

    it('needs a bearer token', async () => {
      assertError(await server.app.inject({ method: 'POST', url: '/api/geofences/', payload: { name: 'n', area: 'CIRCLE (1 2, 3)' } }), 401, 'UNAUTHORIZED');
      assertError(await server.app.inject({ url: '/api/geofences/' }), 401, 'UNAUTHORIZED');
    });
  });

  describe('visibility', () => {
    let ownersFence: { id: number };
    let friendsFence: { id: number };
    let strangersFence: { id: number };
    before(async () => {
      ownersFence = await created(owner, { name: 'Owner fence', area: 'CIRCLE (1 1, 10)' });
      friendsFence = await created(friend, { name: 'Friend fence', area: 'CIRCLE (2 2, 10)' });
      strangersFence = await created(stranger, { name: 'Stranger fence', area: 'CIRCLE (3 3, 10)' });
    });

    it("GET / lists the caller's own geofences only", async () => {
      const names = namesOf(await list(friend));
      assert.deepEqual(names, ['Friend fence']);
      assert.ok(namesOf(await list(owner)).includes('Owner fence'));
      assert.ok(!namesOf(await list(owner)).includes('Friend fence'));
    });

    it('all=true adds the geofences of owners whose devices are shared with the geofences permission', async () => {
      const names = namesOf(await list(friend, '?all=true'));
      assert.ok(names.includes('Friend fence') && names.includes('Owner fence') && names.includes('Home'));
      assert.ok(!names.includes('Stranger fence'));
      assert.deepEqual(namesOf(await list(friend, '?all=1')), names);
      assert.deepEqual(namesOf(await list(friend, '?all=false')), ['Friend fence']);
      assert.deepEqual(namesOf(await list(friend, '?all=0')), ['Friend fence']);
      assert.deepEqual(namesOf(await list(viewer, '?all=true')), [], 'shared without the geofences permission');
      assertError(await list(friend, '?all=yes'), 400, 'VALIDATION_FAILED', /all/);
    });

    it('userId other than the caller is for administrators only', async () => {
      assertError(await list(friend, `?userId=${owner.userId}`), 403, 'FORBIDDEN');
      assert.deepEqual(namesOf(await list(friend, `?userId=${friend.userId}`)), ['Friend fence']);
      assert.deepEqual(namesOf(await list(admin, `?userId=${stranger.userId}`)), ['Stranger fence']);
      const asFriend = namesOf(await list(admin, `?userId=${friend.userId}&all=true`));
      assert.deepEqual(asFriend, namesOf(await list(friend, '?all=true')));
      assert.deepEqual(namesOf(await list(admin)), [], "the administrator's own");
      const everything = namesOf(await list(admin, '?all=true'));
      assert.ok(['Owner fence', 'Friend fence', 'Stranger fence'].every((name) => everything.includes(name)));
    });

    it('GET /{id}: the owner, users shared with geofences, administrators; 403 for others, 404 when missing', async () => {
      assert.equal((await get(server, `/api/geofences/${ownersFence.id}`, friend)).statusCode, 200);
      assert.equal((await get(server, `/api/geofences/${strangersFence.id}`, admin)).statusCode, 200);
      assertError(await get(server, `/api/geofences/${ownersFence.id}`, viewer), 403, 'FORBIDDEN');
      assertError(await get(server, `/api/geofences/${ownersFence.id}`, stranger), 403, 'FORBIDDEN');
      assertError(await get(server, `/api/geofences/${friendsFence.id}`, owner), 403, 'FORBIDDEN', undefined);
      assertError(await get(server, '/api/geofences/999999', owner), 404, 'NOT_FOUND');
      assertError(await get(server, '/api/geofences/abc', owner), 400, 'VALIDATION_FAILED');
    });
  });

  describe('update and delete', () => {
    it('the owner changes what is given and keeps the rest; the area is normalised again', async () => {
      const fence = await created(owner, { name: 'Office', area: 'CIRCLE (1 2, 3)', description: 'old', attributes: { a: 1 } });
      const response = await update(owner, fence.id, { area: 'polygon ((0 0, 0 1, 1 1, 0 0))', description: null });
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json(), { id: fence.id, name: 'Office', description: null, area: 'POLYGON ((0 0, 0 1, 1 1, 0 0))', calendarId: null, attributes: { a: 1 } });
      assert.deepEqual((await get(server, `/api/geofences/${fence.id}`, owner)).json(), response.json());
      const renamed = await update(owner, fence.id, { name: 'HQ', calendarId: 4, attributes: { b: 2 } });
      assert.deepEqual(renamed.json(), { id: fence.id, name: 'HQ', description: null, area: 'POLYGON ((0 0, 0 1, 1 1, 0 0))', calendarId: 4, attributes: { b: 2 } });
    });

    it('refuses bad areas, bad bodies and non-owners, changing nothing', async () => {
      const fence = await created(owner, { name: 'Keep', area: 'LINESTRING (1 2, 3 4)' });
      const before = (await get(server, `/api/geofences/${fence.id}`, owner)).json();
      assertError(await update(owner, fence.id, { area: 'POLYGON ((1 2, 3 4, 5 6, 7 8))' }), 400, 'INVALID_AREA', /not closed/);
      assertError(await update(owner, fence.id, { attributes: { polylineDistance: -1 } }), 400, 'INVALID_AREA', /polylineDistance/);
      assertError(await update(owner, fence.id, { area: '' }), 400, 'INVALID_AREA', /area text is empty/);
      assertError(await update(owner, fence.id, {}), 400, 'VALIDATION_FAILED');
      assertError(await update(owner, fence.id, { name: '' }), 400, 'VALIDATION_FAILED', /name/);
      assertError(await update(owner, fence.id, { colour: 'red' }), 400, 'VALIDATION_FAILED', /colour/);
      assertError(await update(friend, fence.id, { name: 'Mine' }), 403, 'FORBIDDEN', /owner/);
      assertError(await update(stranger, fence.id, { name: 'Mine' }), 403, 'FORBIDDEN');
      assertError(await update(owner, 999_999, { name: 'Ghost' }), 404, 'NOT_FOUND');
      assert.deepEqual((await get(server, `/api/geofences/${fence.id}`, owner)).json(), before);
    });

    it('administrators may change and delete any geofence', async () => {
      const fence = await created(stranger, { name: 'Theirs', area: 'CIRCLE (1 2, 3)' });
      assert.equal((await update(admin, fence.id, { name: 'Renamed' })).json().name, 'Renamed');
      assert.equal((await remove(admin, fence.id)).statusCode, 204);
      assertError(await get(server, `/api/geofences/${fence.id}`, stranger), 404, 'NOT_FOUND');
    });

    it('delete: 403 for others (the geofence stays), 204 for the owner, then 404', async () => {
      const fence = await created(owner, { name: 'Temporary', area: 'CIRCLE (1 2, 3)' });
      assertError(await remove(friend, fence.id), 403, 'FORBIDDEN');
      assertError(await remove(stranger, fence.id), 403, 'FORBIDDEN');
      assert.equal((await get(server, `/api/geofences/${fence.id}`, owner)).statusCode, 200);
      assert.equal((await remove(owner, fence.id)).statusCode, 204);
      assertError(await get(server, `/api/geofences/${fence.id}`, owner), 404, 'NOT_FOUND');
      assertError(await remove(owner, fence.id), 404, 'NOT_FOUND');
    });
  });

  describe('geofencesContaining (for the event engine)', () => {
    it('answers the owner\'s geofences containing a point and follows creates, updates and deletes made elsewhere', async () => {
      const user = await signIn(server, 'containing@example.com');
      assert.deepEqual(await api.geofencesContaining(user.userId, BERLIN), []);
      const circle = await created(user, { name: 'Mitte', area: 'CIRCLE (52.52 13.405, 500)' });
      const line = await created(user, { name: 'Street', area: 'LINESTRING (52.52 13.3, 52.52 13.5)', attributes: { polylineDistance: 30 } });
      await created(user, { name: 'Far', area: 'CIRCLE (10 10, 500)' });
      assert.deepEqual(await api.geofencesContaining(user.userId, BERLIN), [circle.id, line.id]);
      assert.deepEqual(await api.geofencesContaining(user.userId, { lat: 52.5203, lon: 13.35 }), [line.id], 'within 30 m of the line');
      assert.deepEqual(await api.geofencesContaining(stranger.userId, BERLIN), [], "another user's geofences do not apply");

      await update(user, line.id, { attributes: { polylineDistance: 10 } });
      assert.deepEqual(await api.geofencesContaining(user.userId, { lat: 52.5203, lon: 13.35 }), [], 'buffer narrowed');
      await update(user, circle.id, { area: 'CIRCLE (48.85 2.35, 500)' });
      assert.deepEqual(await api.geofencesContaining(user.userId, BERLIN), [line.id]);
      assert.deepEqual(await api.geofencesContaining(user.userId, { lat: 48.85, lon: 2.35 }), [circle.id]);
      await remove(user, line.id);
      assert.deepEqual(await api.geofencesContaining(user.userId, BERLIN), []);
    });
  });

  describe('account deletion', () => {
    it("removes the user's geofences", async () => {
      const leaving = await signIn(server, 'leaving@example.com');
      const fence = await created(leaving, { name: 'Gone soon', area: 'CIRCLE (52.52 13.405, 500)' });
      assert.deepEqual(await api.geofencesContaining(leaving.userId, BERLIN), [fence.id]);
      await server.auth!.api.accounts.delete(leaving.userId);
      await server.outbox!.drainNow();
      assertError(await get(server, `/api/geofences/${fence.id}`, admin), 404, 'NOT_FOUND');
      assert.deepEqual(await api.geofencesContaining(leaving.userId, BERLIN), []);
      const left = await server.database!.db.selectFrom('geofences').select('id').where('owner_id', '=', leaving.userId).execute();
      assert.deepEqual(left, []);
    });
  });
});
