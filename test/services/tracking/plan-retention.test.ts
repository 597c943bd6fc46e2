import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { TrackingApi } from '../../../src/services/tracking/api.ts';
import type { TrackingModule } from '../../../src/services/tracking/module.ts';
import { signIn } from '../../support/api.ts';
import type { SignedIn } from '../../support/api.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { writeTestPlans } from '../billing/support/plans.ts';
import { iso } from '../../factories/position.ts';
import { createDevice, get } from './support/tracking.ts';

const DAY = 86_400_000;

/** Free serves 7 days, pro 30 (test/services/billing/support/plans.ts); PLAN_GRACE_DAYS is 5 here. */
describeEachEngine('retention by the owner\'s plan', (engine) => {
  let server: TestServer;
  let tracking: TrackingModule;
  let api: TrackingApi;
  let free: SignedIn;
  let pro: SignedIn;
  let admin: SignedIn;
  let freeDevice: number;
  let proDevice: number;
  const now = Date.now();
  const ids = { beyondGrace: 0, inGrace: 0, recent: 0, proOld: 0, beyondGraceEvent: 0, inGraceEvent: 0 };

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off', PLANS_FILE: writeTestPlans(), PLAN_GRACE_DAYS: '5' });
    tracking = server.tracking as TrackingModule;
    api = tracking.api;
    free = await signIn(server, 'retention-free@example.com');
    pro = await signIn(server, 'retention-pro@example.com');
    // An administrator keeps everything but has no devices: that must not keep anyone else's data.
    admin = await signIn(server, 'retention-admin@example.com', { administrator: true });
    const setPro = await server.app.inject({ method: 'PUT', url: `/api/subscriptions/${pro.userId}/plan`, headers: admin.authorization, payload: { planId: 'pro' } });
    assert.equal(setPro.statusCode, 200, setPro.body);
    freeDevice = await createDevice(server, free, 'retention-free-1');
    proDevice = await createDevice(server, pro, 'retention-pro-1');
    const at = (deviceId: number, time: number) => ({ deviceId, protocol: 'osmand', serverTime: time, deviceTime: time, fixTime: time, valid: true, latitude: 52.5, longitude: 13.4 });
    [ids.beyondGrace, ids.inGrace, ids.recent] = (await api.storePositions([at(freeDevice, now - 20 * DAY), at(freeDevice, now - 10 * DAY), at(freeDevice, now - 3_600_000)])) as [number, number, number];
    [ids.proOld] = (await api.storePositions([at(proDevice, now - 20 * DAY), at(proDevice, now - 3_600_000)])) as [number];
    [ids.beyondGraceEvent, ids.inGraceEvent] = (await api.storeEvents([
      { type: 'alarm', eventTime: now - 20 * DAY, deviceId: freeDevice },
      { type: 'alarm', eventTime: now - 10 * DAY, deviceId: freeDevice },
    ])) as [number, number];
  });
  after(() => server.dispose());

  const range = `from=${encodeURIComponent(iso(now - 60 * DAY))}&to=${encodeURIComponent(iso(now + DAY))}`;
  const historyIds = async (user: SignedIn, deviceId: number) => ((await get(server, `/api/positions?deviceId=${deviceId}&${range}`, user)).json() as { id: number }[]).map((row) => row.id);
  const eventIds = async (user: SignedIn, deviceId: number) => ((await get(server, `/api/events/?deviceId=${deviceId}&${range}`, user)).json() as { id: number }[]).map((row) => row.id);

  it('deletes only what lies beyond historyDays plus the grace for each owner; an upgrade inside the grace brings the rest back', async () => {
    // Downgraded (free): the history cut hides the ten-day-old fix before the job runs.
    assert.deepEqual(await historyIds(free, freeDevice), [ids.recent]);
    const run = await tracking.retention.run();
    assert.ok(run);
    assert.equal(run.positionsDeleted, 1);
    assert.equal(run.eventsDeleted, 1);
    // The pro owner's twenty-day-old fix stays under its 30 days.
    assert.deepEqual((await historyIds(pro, proDevice)).slice(0, 1), [ids.proOld]);

    const upgrade = await server.app.inject({ method: 'PUT', url: `/api/subscriptions/${free.userId}/plan`, headers: admin.authorization, payload: { planId: 'pro' } });
    assert.equal(upgrade.statusCode, 200, upgrade.body);
    assert.deepEqual(await historyIds(free, freeDevice), [ids.inGrace, ids.recent], 'inside the grace: served again; beyond it: gone');
    assert.deepEqual(await eventIds(free, freeDevice), [ids.inGraceEvent]);
  });
});
