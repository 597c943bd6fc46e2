import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { TrackingApi } from '../../../src/services/tracking/api.ts';
import { signIn } from '../../support/api.ts';
import type { SignedIn } from '../../support/api.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { writeTestPlans } from '../billing/support/plans.ts';
import { iso } from '../../factories/position.ts';
import { ALL, createDevice, get, share } from './support/tracking.ts';

const DAY = 86_400_000;

/** Free serves 7 days of history, pro 30, team all of it (test/services/billing/support/plans.ts). */
describeEachEngine('history within the owner\'s plan', (engine) => {
  let server: TestServer;
  let api: TrackingApi;
  let owner: SignedIn;
  let viewer: SignedIn;
  let admin: SignedIn;
  let device: number;
  let idle: number;
  const now = Date.now();
  const positionIds = { old: 0, recent: 0, latest: 0, idle: 0 };
  const eventIds = { old: 0, recent: 0 };

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off', PLANS_FILE: writeTestPlans() });
    api = (server.tracking as NonNullable<typeof server.tracking>).api;
    owner = await signIn(server, 'history-owner@example.com');
    viewer = await signIn(server, 'history-viewer@example.com');
    admin = await signIn(server, 'history-admin@example.com', { administrator: true });
    device = await createDevice(server, owner, 'history-1');
    idle = await createDevice(server, owner, 'history-idle');
    await share(server, owner, device, viewer.email, ALL);
    const at = (deviceId: number, time: number) => ({ deviceId, protocol: 'osmand', serverTime: time, deviceTime: time, fixTime: time, valid: true, latitude: 52.5, longitude: 13.4 });
    [positionIds.old, positionIds.recent, positionIds.latest] = (await api.storePositions([at(device, now - 20 * DAY), at(device, now - 3 * DAY), at(device, now - 3_600_000)])) as [number, number, number];
    [positionIds.idle] = (await api.storePositions([at(idle, now - 10 * DAY)])) as [number];
    [eventIds.old, eventIds.recent] = (await api.storeEvents([
      { type: 'alarm', eventTime: now - 20 * DAY, deviceId: device },
      { type: 'alarm', eventTime: now - 2 * DAY, deviceId: device },
    ])) as [number, number];
  });
  after(() => server.dispose());

  const range = `from=${encodeURIComponent(iso(now - 60 * DAY))}&to=${encodeURIComponent(iso(now + DAY))}`;
  const historyIds = async (user: SignedIn) => ((await get(server, `/api/positions?deviceId=${device}&${range}`, user)).json() as { id: number }[]).map((row) => row.id);
  const eventList = async (user: SignedIn, query = `deviceId=${device}&`) => ((await get(server, `/api/events/?${query}${range}`, user)).json() as { id: number }[]).map((row) => row.id);
  const setPlan = (user: SignedIn, planId: string) =>
    server.app.inject({ method: 'PUT', url: `/api/subscriptions/${user.userId}/plan`, headers: admin.authorization, payload: { planId } });
  const clearPlan = (user: SignedIn) => server.app.inject({ method: 'DELETE', url: `/api/subscriptions/${user.userId}/plan`, headers: admin.authorization });

  it('a history, its exports and positions by id stop at the owner\'s historyDays, for every viewer', async () => {
    const served = [positionIds.recent, positionIds.latest];
    assert.deepEqual(await historyIds(owner), served);
    assert.deepEqual(await historyIds(viewer), served, 'a shared device follows its owner\'s plan');
    assert.deepEqual(await historyIds(admin), served);

    const csv = (await get(server, `/api/positions?deviceId=${device}&${range}`, owner, { accept: 'text/csv' })).body.trim().split('\n');
    assert.equal(csv.length, 1 + served.length, 'a header and the served positions');
    const gpx = (await get(server, `/api/positions?deviceId=${device}&${range}`, owner, { accept: 'application/gpx+xml' })).body;
    assert.equal(gpx.match(/<trkpt /g)?.length, served.length);

    const beyond = await get(server, `/api/positions?deviceId=${device}&from=${encodeURIComponent(iso(now - 60 * DAY))}&to=${encodeURIComponent(iso(now - 10 * DAY))}`, owner);
    assert.equal(beyond.statusCode, 200);
    assert.deepEqual(beyond.json(), []);

    const byId = await get(server, `/api/positions?id=${positionIds.old}&id=${positionIds.recent}`, owner);
    assert.deepEqual((byId.json() as { id: number }[]).map((row) => row.id), [positionIds.recent]);
  });

  it('the latest position of a device is shown whatever its age', async () => {
    const latest = await get(server, `/api/positions?deviceId=${idle}`, owner);
    assert.deepEqual((latest.json() as { id: number }[]).map((row) => row.id), [positionIds.idle]);
  });

  it('events stop at the owner\'s historyDays; an older event answers 404', async () => {
    assert.deepEqual(await eventList(owner), [eventIds.recent]);
    assert.deepEqual(await eventList(viewer, ''), [eventIds.recent]);
    const old = await get(server, `/api/events/${eventIds.old}`, owner);
    assert.equal(old.statusCode, 404);
    assert.equal(old.json().code, 'NOT_FOUND');
    assert.equal((await get(server, `/api/events/${eventIds.recent}`, owner)).statusCode, 200);
  });

  it('an upgrade brings the older history back; a downgrade cuts it again; the viewer\'s own plan changes nothing', async () => {
    assert.equal((await setPlan(viewer, 'team')).statusCode, 200);
    assert.deepEqual(await historyIds(viewer), [positionIds.recent, positionIds.latest]);

    assert.equal((await setPlan(owner, 'pro')).statusCode, 200);
    const all = [positionIds.old, positionIds.recent, positionIds.latest];
    assert.deepEqual(await historyIds(owner), all);
    assert.deepEqual(await historyIds(viewer), all);
    assert.deepEqual(await eventList(owner), [eventIds.old, eventIds.recent]);
    assert.equal((await get(server, `/api/events/${eventIds.old}`, viewer)).statusCode, 200);

    assert.equal((await clearPlan(owner)).statusCode, 204);
    assert.deepEqual(await historyIds(owner), [positionIds.recent, positionIds.latest]);
    assert.deepEqual(await eventList(owner), [eventIds.recent]);
  });
});
