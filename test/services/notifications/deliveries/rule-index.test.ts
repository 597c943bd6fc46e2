import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { RuleIndex } from '../../../../src/services/notifications/deliveries/rule-index.ts';
import { NotificationsRepository } from '../../../../src/services/notifications/repository.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestServer } from '../../../support/server.ts';
import { Client } from '../../devices/helpers.ts';

describeEachEngine('the rule index', (engine) => {
  let server: TestServer;
  let owner: Client;
  let device: number;
  let repository: NotificationsRepository;
  let reads: number;
  /** Holds each read after its query until released, so a change can come while it is in flight. */
  let gate: Promise<void> | undefined;
  let queried = () => {};

  before(async () => {
    server = await startTestServer(engine, { NOTIFY_ALLOW_PRIVATE_URLS: 'true' });
    owner = new Client(server, await server.login({ email: 'rule-index@example.com' }));
    device = (await owner.post('/api/devices/', { name: 'Van', uniqueId: 'rule-index-van' })).body.id;
    repository = new NotificationsRepository(server.database!);
    const rulesOfType = repository.rulesOfType.bind(repository);
    repository.rulesOfType = async (type) => {
      reads += 1;
      const rules = await rulesOfType(type);
      queried();
      await gate;
      return rules;
    };
  });
  after(() => server.dispose());

  async function addRule(body: Record<string, unknown>): Promise<number> {
    const created = await owner.post('/api/notifications', { type: 'alarm', channels: ['web'], ...body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body.id;
  }

  it('reads a type once for concurrent matches, keeps it, and reads it again after a change; a read begun before the change is answered, not kept', async () => {
    const always = await addRule({ always: true });
    const named = await addRule({ deviceIds: [device] });
    const index = new RuleIndex(repository, 60_000);
    reads = 0;

    const concurrent = await Promise.all([index.rulesFor('alarm', device), index.rulesFor('alarm', device), index.rulesFor('alarm', device + 1)]);
    assert.equal(reads, 1, 'one read for every concurrent match');
    assert.deepEqual(concurrent[0].map((rule) => rule.row.id), [always, named]);
    assert.deepEqual(concurrent[2].map((rule) => rule.row.id), [always], 'another device gets the always rules only');
    await index.rulesFor('alarm', device);
    assert.equal(reads, 1, 'kept');

    index.invalidate();
    let release = () => {};
    gate = new Promise((resolve) => (release = resolve));
    const read = new Promise<void>((resolve) => (queried = resolve));
    const inFlight = index.rulesFor('alarm', device);
    await read;
    const added = await addRule({ always: true, attributes: { alarms: 'sos' } });
    index.invalidate();
    release();
    gate = undefined;
    assert.deepEqual((await inFlight).map((rule) => rule.row.id), [always, named], 'the read begun before the change is answered');
    assert.deepEqual((await index.rulesFor('alarm', device)).map((rule) => rule.row.id), [always, added, named], 'and not kept: the next match reads again');
    assert.equal(reads, 3);
  });

  it('keeps one of the rules that reach the same recipients on the same conditions: the first, in order', async () => {
    const user = new Client(server, await server.login({ email: 'rule-index-twins@example.com' }));
    const own = (await user.post('/api/devices/', { name: 'Twin', uniqueId: 'rule-index-twin' })).body.id;
    const add = async (body: Record<string, unknown>) => {
      const created = await user.post('/api/notifications', { type: 'ignitionOn', ...body });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body.id as number;
    };
    const first = await add({ always: true, channels: ['web'] });
    for (let index = 0; index < 30; index++) await add({ always: true, channels: ['web'] });
    const otherAlarms = await add({ always: true, channels: ['web'], attributes: { alarms: 'sos' } });
    const sameAlarms = await add({ always: true, channels: ['web'], attributes: { alarms: 'sos' } });
    const named = await add({ deviceIds: [own], channels: ['web'] });
    await add({ deviceIds: [own], channels: ['web'] });
    const hooks = [
      await add({ always: true, channels: ['webhook'], attributes: { webhookUrl: 'http://127.0.0.1:9/hook' } }),
      await add({ always: true, channels: ['webhook'], attributes: { webhookUrl: 'http://127.0.0.1:9/hook' } }),
    ];
    const index = new RuleIndex(repository, 60_000);
    const matched = (await index.rulesFor('ignitionOn', own)).map((rule) => rule.row.id);
    assert.deepEqual(matched, [first, otherAlarms, ...hooks, named], 'a webhook is a recipient of each rule; twins of the others are left out');
    assert.ok(!matched.includes(sameAlarms));
    const user2 = new Client(server, await server.login({ email: 'rule-index-other@example.com' }));
    assert.equal((await user2.post('/api/notifications', { type: 'ignitionOn', always: true, channels: ['web'] })).status, 201);
    assert.equal((await index.rulesFor('ignitionOn', own)).length, matched.length, 'the index is kept until a change');
    index.invalidate();
    assert.equal((await index.rulesFor('ignitionOn', own)).length, matched.length + 1, "another user's identical rule is a rule of its own");
  });

  it('reads again once its TTL has passed', async () => {
    const index = new RuleIndex(repository, 0);
    reads = 0;
    await index.rulesFor('alarm', device);
    await index.rulesFor('alarm', device);
    assert.equal(reads, 2);
  });
});
