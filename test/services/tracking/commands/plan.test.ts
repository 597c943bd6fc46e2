import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { signIn } from '../../../support/api.ts';
import type { SignedIn } from '../../../support/api.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestServer } from '../../../support/server.ts';
import { writeTestPlans } from '../../billing/support/plans.ts';
import { createDevice } from '../support/tracking.ts';

/** Free leaves commands out, pro includes them (test/services/billing/support/plans.ts). */
describeEachEngine('commands within the sender\'s plan', (engine) => {
  let server: TestServer;
  let owner: SignedIn;
  let admin: SignedIn;
  let ownerDevice: number;
  let adminDevice: number;

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off', PLANS_FILE: writeTestPlans() });
    owner = await signIn(server, 'commands-plan-owner@example.com');
    admin = await signIn(server, 'commands-plan-admin@example.com', { administrator: true });
    ownerDevice = await createDevice(server, owner, 'commands-plan-1');
    adminDevice = await createDevice(server, admin, 'commands-plan-2');
  });
  after(() => server.dispose());

  const send = (user: SignedIn, deviceId: number) =>
    server.app.inject({ method: 'POST', url: '/api/commands/send', headers: user.authorization, payload: { deviceId, type: 'custom', attributes: { data: 'WHERE#' } } });
  const history = async (user: SignedIn, deviceId: number) => {
    const response = await server.app.inject({ method: 'GET', url: `/api/commands/history?deviceId=${deviceId}`, headers: user.authorization });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as unknown[];
  };
  const setPlan = (planId: string) =>
    server.app.inject({ method: 'PUT', url: `/api/subscriptions/${owner.userId}/plan`, headers: admin.authorization, payload: { planId } });

  it('a plan without commands answers 402 FEATURE_NOT_IN_PLAN and queues nothing', async () => {
    const refused = await send(owner, ownerDevice);
    assert.equal(refused.statusCode, 402, refused.body);
    const body = refused.json();
    assert.equal(body.code, 'FEATURE_NOT_IN_PLAN');
    assert.deepEqual(body.details, [{ path: '/body', message: body.message, feature: 'commands' }]);
    assert.deepEqual(await history(owner, ownerDevice), []);
  });

  it('an administrator sends whatever the plans say', async () => {
    const queued = await send(admin, adminDevice);
    assert.equal(queued.statusCode, 202, queued.body);
    assert.equal((await history(admin, adminDevice)).length, 1);
  });

  it('a plan change takes effect at once, both ways', async () => {
    assert.equal((await setPlan('pro')).statusCode, 200);
    const queued = await send(owner, ownerDevice);
    assert.equal(queued.statusCode, 202, queued.body);
    assert.equal(queued.json().status, 'queued');
    assert.equal((await history(owner, ownerDevice)).length, 1);

    assert.equal((await setPlan('free')).statusCode, 200);
    assert.equal((await send(owner, ownerDevice)).statusCode, 402);
    assert.equal((await history(owner, ownerDevice)).length, 1);
  });
});
