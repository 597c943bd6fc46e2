import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { request } from 'undici';
import type { DevicesModule } from '../../src/services/devices/module.ts';
import { assertError } from '../support/api.ts';
import { describeEachEngine } from '../support/engines.ts';
import { eventually } from '../support/eventually.ts';
import { sampleOf } from '../support/metrics.ts';
import { freePort } from '../support/ports.ts';
import { startTestServer } from '../support/server.ts';
import type { TestLogin, TestServer } from '../support/server.ts';

const OUTBOX_DEVICES = { queue: 'outbox', consumer: 'devices' };

describeEachEngine('dead letters: durable work past its attempt cap, listed and retried by administrators', (engine) => {
  let server: TestServer;
  let admin: TestLogin;
  let member: TestLogin;

  const scrape = async () => (await request(server.metricsUrl as string)).body.text();
  const list = (query = '', who: TestLogin = admin) => server.app.inject({ method: 'GET', url: `/api/admin/dead-letters${query}`, headers: who.authorization });
  const retry = (id: number, who: TestLogin = admin) => server.app.inject({ method: 'POST', url: `/api/admin/dead-letters/${id}/retry`, headers: who.authorization });
  const devicesOf = async (userId: number) =>
    (await server.database!.db.selectFrom('devices').select('id').where('owner_id', '=', userId).execute()).length;
  const letters = () => server.database!.db.selectFrom('dead_letters').selectAll().orderBy('id').execute();
  // Every fact handled, those the handlers recorded too (an account's devices deleted): a stop then abandons no handler to its lease.
  const settled = () =>
    eventually(async () => (await server.database!.db.selectFrom('outbox').select('id').execute()).length === 0, 'every fact handled', 10_000);

  async function ownerOfOneDevice(email: string): Promise<TestLogin> {
    const owner = await server.login({ email });
    const made = await server.app.inject({ method: 'POST', url: '/api/devices/', headers: owner.authorization, payload: { name: email, uniqueId: email } });
    assert.equal(made.statusCode, 201, made.body);
    return owner;
  }

  async function deleteAccount(user: TestLogin): Promise<void> {
    assert.equal((await server.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: user.authorization })).statusCode, 204);
  }

  before(async () => {
    server = await startTestServer(engine, { QUEUE_MAX_ATTEMPTS: '2', METRICS_PORT: String(await freePort()) });
    admin = await server.login({ email: 'dead-letters-admin@example.com', administrator: true });
    member = await server.login({ email: 'dead-letters-member@example.com' });
  });
  after(() => server.dispose());

  it('a fact the devices module always refuses is dead-lettered after the cap, later facts go on, and a retry runs it once the module is fixed', async () => {
    const devices = server.devices as DevicesModule;
    const removeUserData = devices.removeUserData;
    const refused = await ownerOfOneDevice('dead-letters-refused@example.com');
    const later = await ownerOfOneDevice('dead-letters-later@example.com');
    devices.removeUserData = async (userId) => {
      if (userId === refused.userId) throw new Error(`devices refused user ${userId}`);
      return removeUserData(userId);
    };
    try {
      await deleteAccount(refused);
      await deleteAccount(later);
      await eventually(async () => (await letters()).length === 1, 'the refused fact reached the dead letters', 10_000);
      await eventually(async () => (await devicesOf(later.userId)) === 0, 'the later fact of the same module was handled', 10_000);
      assert.equal(await devicesOf(refused.userId), 1, 'the refused account still has its device');

      const listed = await list();
      assert.equal(listed.statusCode, 200, listed.body);
      const page = listed.json();
      assert.deepEqual({ ...page, deadLetters: undefined }, { deadLetters: undefined, total: 1, page: 1, limit: 50 });
      const [letter] = page.deadLetters;
      assert.deepEqual(
        { ...letter, id: undefined, createdAt: undefined, failedAt: undefined },
        {
          id: undefined,
          queue: 'outbox',
          consumer: 'devices',
          topic: 'auth.user.deleted',
          payload: JSON.stringify({ userId: refused.userId }),
          payloadTruncated: false,
          attempts: 2,
          lastError: `devices refused user ${refused.userId}`,
          createdAt: undefined,
          failedAt: undefined,
          retryRequestedAt: null,
        },
      );
      assert.ok(Date.parse(letter.failedAt) >= Date.parse(letter.createdAt));
      assert.equal((await list('?consumer=devices&queue=outbox')).json().total, 1);
      assert.equal((await list('?consumer=tracking')).json().total, 0, 'tracking handled its copy of the fact');

      const metrics = await scrape();
      assert.equal(sampleOf(metrics, 'trackstack_queue_dead_letters', OUTBOX_DEVICES), 1);
      assert.equal(sampleOf(metrics, 'trackstack_queue_failures_total', { ...OUTBOX_DEVICES, outcome: 'retry' }), 1);
      assert.equal(sampleOf(metrics, 'trackstack_queue_failures_total', { ...OUTBOX_DEVICES, outcome: 'dead_letter' }), 1);
      assert.match(metrics, /trackstack_queue_depth\{queue="outbox",consumer="devices"\} 0/);

      devices.removeUserData = removeUserData;
      const retried = await retry(letter.id);
      assert.equal(retried.statusCode, 202, retried.body);
      assert.equal(retried.json().id, letter.id);
      assert.ok(Date.parse(retried.json().retryRequestedAt) > 0, 'the request is on the letter');
      await eventually(async () => (await devicesOf(refused.userId)) === 0, 'the retried fact removed the device', 10_000);
      await eventually(async () => (await list()).json().total === 0, 'the letter left the list');
      assert.deepEqual(await letters(), []);
      assert.equal(sampleOf(await scrape(), 'trackstack_queue_dead_letters', OUTBOX_DEVICES), 0);
      assertError(await retry(letter.id), 404, 'DEAD_LETTER_NOT_FOUND');
    } finally {
      devices.removeUserData = removeUserData;
    }
  });

  it('only administrators list or retry, and a refused or unknown retry changes nothing', async () => {
    const deadAt = Date.now();
    await server.database!.db
      .insertInto('dead_letters')
      .values({ queue: 'outbox', consumer: 'devices', topic: 'auth.user.deleted', source_id: null, payload: '{"userId":999999}', attempts: 2, last_error: 'refused', created_at: deadAt, failed_at: deadAt, retry_requested_at: null })
      .execute();
    const [letter] = await letters();
    // The owner would take the retry back at once: stopped, the request stays visible on the letter.
    await settled();
    await server.outbox!.stop();
    try {
      assertError(await list('', member), 403, 'FORBIDDEN');
      assertError(await retry(Number(letter!.id), member), 403, 'FORBIDDEN');
      assertError(await server.app.inject({ method: 'GET', url: '/api/admin/dead-letters' }), 401, 'UNAUTHORIZED');
      assertError(await retry(Number(letter!.id) + 1000), 404, 'DEAD_LETTER_NOT_FOUND');
      assertError(await list('?limit=0'), 400, 'VALIDATION_FAILED');
      assertError(await list('?limit=101'), 400, 'VALIDATION_FAILED');
      assertError(await list('?consumer=Devices%00'), 400, 'VALIDATION_FAILED');
      assertError(await list(`?queue=${'q'.repeat(65)}`), 400, 'VALIDATION_FAILED');
      assertError(await retry(0), 400, 'VALIDATION_FAILED');
      assert.deepEqual(await letters(), [letter], 'nothing changed');

      const first = await retry(Number(letter!.id));
      assert.equal(first.statusCode, 202, first.body);
      const again = await retry(Number(letter!.id));
      assert.equal(again.json().retryRequestedAt, first.json().retryRequestedAt, 'asking again keeps the first request');
      assert.equal((await list()).json().deadLetters[0].retryRequestedAt, first.json().retryRequestedAt);
    } finally {
      server.outbox!.start();
    }
    await eventually(async () => (await letters()).length === 0, 'the owner took the letter back once running');
    await settled();
  });

  it('reports the depth and the age of the oldest fact of each consumer', async () => {
    await settled();
    await server.outbox!.stop();
    try {
      await server.outbox!.record(server.database!.db, 'auth.user.deleted', { userId: 999_998 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const metrics = await scrape();
      for (const consumer of ['devices', 'tracking', 'notifications']) {
        assert.equal(sampleOf(metrics, 'trackstack_queue_depth', { queue: 'outbox', consumer }), 1, consumer);
        assert.ok(sampleOf(metrics, 'trackstack_queue_oldest_age_seconds', { queue: 'outbox', consumer }) >= 0.05, consumer);
      }
    } finally {
      server.outbox!.start();
    }
    await eventually(async () => sampleOf(await scrape(), 'trackstack_queue_depth', OUTBOX_DEVICES) === 0, 'handled once running');
    assert.equal(sampleOf(await scrape(), 'trackstack_queue_oldest_age_seconds', OUTBOX_DEVICES), 0);
  });
});
