import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { Kysely } from 'kysely';
import type { AuthTables } from '../../../src/services/auth/tables.ts';
import { UserRepository } from '../../../src/services/auth/users/repository.ts';
import { UserStatusCache } from '../../../src/services/auth/users/status-cache.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { createUser } from './support/auth.ts';

describeEachEngine('the account status cache behind /validate', (engine) => {
  let server: TestServer;
  let users: UserRepository;
  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off' });
    users = new UserRepository(server.database!.db as Kysely<AuthTables>);
  });
  after(() => server.dispose());

  const expire = (id: number) => server.database!.db.updateTable('users').set({ expiration_time: Date.now() - 1 }).where('id', '=', id).execute();

  it('answers from memory until forgotten', async () => {
    const id = await createUser(server, { email: 'status-remembered@example.com' });
    const statuses = new UserStatusCache(users);
    assert.equal(await statuses.isActive(id), true);
    await expire(id);
    assert.equal(await statuses.isActive(id), true, 'still the remembered answer');
    statuses.forget(id);
    assert.equal(await statuses.isActive(id), false);
  });

  it('does not keep a read that overlapped a change of the account', async () => {
    const id = await createUser(server, { email: 'status-raced@example.com' });
    const read = Promise.withResolvers<void>();
    const gate = Promise.withResolvers<void>();
    // The real repository, whose answer is held back until the change below has been made and announced.
    const held = Object.assign(Object.create(users) as UserRepository, {
      findById: async (userId: number) => {
        const row = await users.findById(userId);
        read.resolve();
        await gate.promise;
        return row;
      },
    });
    const statuses = new UserStatusCache(held);
    const racing = statuses.isActive(id);
    await read.promise;
    await expire(id);
    statuses.forget(id);
    gate.resolve();
    assert.equal(await racing, true, 'the read predates the change');
    assert.equal(await statuses.isActive(id), false, 'and was not kept');
  });
});
