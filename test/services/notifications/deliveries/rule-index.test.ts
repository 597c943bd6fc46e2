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
    server = await startTestServer(engine);
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
    const added = await addRule({ always: true });
    index.invalidate();
    release();
    gate = undefined;
    assert.deepEqual((await inFlight).map((rule) => rule.row.id), [always, named], 'the read begun before the change is answered');
    assert.deepEqual((await index.rulesFor('alarm', device)).map((rule) => rule.row.id), [always, added, named], 'and not kept: the next match reads again');
    assert.equal(reads, 3);
  });

  it('reads again once its TTL has passed', async () => {
    const index = new RuleIndex(repository, 0);
    reads = 0;
    await index.rulesFor('alarm', device);
    await index.rulesFor('alarm', device);
    assert.equal(reads, 2);
  });
});
