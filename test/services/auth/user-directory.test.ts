import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it, mock } from 'node:test';
import { UserAccessCache } from '../../../src/services/auth/users/access-cache.ts';
import type { UserAccess } from '../../../src/services/auth/users/directory.ts';
import { RemoteUserDirectory } from '../../../src/services/auth/users/remote-directory.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer, TEST_INTERNAL_TOKEN } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { signIn } from '../../support/api.ts';
import { createUser, PASSWORD } from './support/auth.ts';
import type { SignedInWithPassword } from '../../support/api.ts';

function access(id: number, email: string, fields: Partial<UserAccess> = {}): UserAccess {
  return { id, email, name: null, administrator: false, disabled: false, readonly: false, deviceReadonly: false, limitCommands: false, expirationTime: null, ...fields };
}

describe('UserAccessCache', () => {
  it('answers by id and by e-mail address (any case) from memory once loaded', async () => {
    const cache = new UserAccessCache(60_000);
    let loads = 0;
    const load = async () => (loads++, access(1, 'one@example.com'));
    await cache.get(1, load);
    assert.deepEqual(await cache.findByEmail('ONE@example.com', load), access(1, 'one@example.com'));
    await cache.get(1, load);
    assert.equal(loads, 1, 'the lookup by id indexed the address too');
    assert.ok(Object.isFrozen(await cache.get(1, load)), 'shared by every caller, so nobody may change it');
  });

  it('does not remember unknown users, so a new account is found at once', async () => {
    const cache = new UserAccessCache(60_000);
    assert.equal(await cache.findByEmail('new@example.com', async () => undefined), undefined);
    assert.deepEqual(await cache.findByEmail('new@example.com', async () => access(2, 'new@example.com')), access(2, 'new@example.com'));
  });

  it('forgets a user, and an address that moved to another account is looked up again', async () => {
    const cache = new UserAccessCache(60_000);
    await cache.findByEmail('moved@example.com', async () => access(1, 'moved@example.com'));
    cache.forget(1);
    assert.equal((await cache.get(1, async () => access(1, 'elsewhere@example.com')))?.email, 'elsewhere@example.com');
    assert.equal((await cache.findByEmail('moved@example.com', async () => access(2, 'moved@example.com')))?.id, 2);
  });

  it('answers a lookup that overlapped a change but does not keep it', async () => {
    const cache = new UserAccessCache(60_000);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = cache.get(1, async () => {
      const before = access(1, 'one@example.com', { administrator: true });
      await gate;
      return before;
    });
    cache.forget(1);
    release();
    assert.equal((await slow)?.administrator, true);
    assert.equal((await cache.get(1, async () => access(1, 'one@example.com')))?.administrator, false);
  });

  it('holds at most maxEntries users, dropping the oldest first', async () => {
    const cache = new UserAccessCache(60_000, 2);
    const loaded: number[] = [];
    const get = (id: number) => cache.get(id, async () => (loaded.push(id), access(id, `${id}@example.com`)));
    for (const id of [1, 2, 3, 3, 2, 1]) await get(id);
    assert.deepEqual(loaded, [1, 2, 3, 1]);
  });

  describe('expiry', () => {
    afterEach(() => mock.timers.reset());

    it('reads a user again once ttlMs has passed', async () => {
      mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
      const cache = new UserAccessCache(2_000);
      await cache.get(1, async () => access(1, 'one@example.com'));
      mock.timers.tick(1_999);
      assert.equal((await cache.get(1, async () => access(1, 'one@example.com', { readonly: true })))?.readonly, false);
      mock.timers.tick(1);
      assert.equal((await cache.get(1, async () => access(1, 'one@example.com', { readonly: true })))?.readonly, true);
    });
  });
});

describeEachEngine('the local user directory follows every change of a user', (engine) => {
  let server: TestServer;
  let admin: SignedInWithPassword;
  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off' });
    await createUser(server, { email: 'directory-admin@example.com', administrator: true });
    admin = await signIn(server, 'directory-admin@example.com', { password: PASSWORD });
  });
  after(() => server.dispose());

  const users = () => server.auth!.api.users;

  it('answers from memory until a change is announced on the bus', async () => {
    const id = await createUser(server, { email: 'quiet@example.com' });
    assert.equal((await users().get(id))?.readonly, false);
    // A write that bypasses the auth module's services is not seen until announced.
    await server.database!.db.updateTable('users').set({ readonly: 1 }).where('id', '=', id).execute();
    assert.equal((await users().get(id))?.readonly, false);
    await server.bus.publish('auth.user.changed', { userId: id });
    assert.equal((await users().get(id))?.readonly, true);
    assert.equal((await users().findByEmail('quiet@example.com'))?.readonly, true);
  });

  it('shows flags changed through PUT /api/auth/users/{id} at once', async () => {
    const id = await createUser(server, { email: 'flagged@example.com' });
    await users().get(id);
    await users().findByEmail('flagged@example.com');
    const changes = { administrator: true, readonly: true, deviceReadonly: true, limitCommands: true, expirationTime: '2031-01-01T00:00:00.000Z' };
    const reply = await server.app.inject({ method: 'PUT', url: `/api/auth/users/${id}`, headers: admin.authorization, payload: changes });
    assert.equal(reply.statusCode, 200, reply.body);
    const expected = { administrator: true, readonly: true, deviceReadonly: true, limitCommands: true, expirationTime: Date.parse('2031-01-01T00:00:00.000Z') };
    for (const user of [await users().get(id), await users().findByEmail('flagged@example.com')]) {
      assert.deepEqual(
        { administrator: user?.administrator, readonly: user?.readonly, deviceReadonly: user?.deviceReadonly, limitCommands: user?.limitCommands, expirationTime: user?.expirationTime },
        expected,
      );
    }
    await server.app.inject({ method: 'PUT', url: `/api/auth/users/${id}`, headers: admin.authorization, payload: { disabled: true } });
    assert.equal((await users().get(id))?.disabled, true);
  });

  it('shows a name changed through PUT /api/auth/profile at once', async () => {
    const id = await createUser(server, { email: 'renamed@example.com', name: 'Old' });
    const user = await signIn(server, 'renamed@example.com', { password: PASSWORD });
    assert.equal((await users().get(id))?.name, 'Old');
    const reply = await server.app.inject({ method: 'PUT', url: '/api/auth/profile', headers: user.authorization, payload: { name: 'New' } });
    assert.equal(reply.statusCode, 200, reply.body);
    assert.equal((await users().get(id))?.name, 'New');
  });

  it('shows an account promoted by ensureAdministrator at once', async () => {
    const id = await createUser(server, { email: 'promoted-directory@example.com' });
    assert.equal((await users().get(id))?.administrator, false);
    await server.auth!.api.accounts.ensureAdministrator('promoted-directory@example.com', PASSWORD);
    assert.equal((await users().get(id))?.administrator, true);
  });

  it('forgets a deleted account, and finds a new account under the same address', async () => {
    const id = await createUser(server, { email: 'gone@example.com' });
    const user = await signIn(server, 'gone@example.com', { password: PASSWORD });
    assert.equal((await users().findByEmail('gone@example.com'))?.id, id);
    assert.equal((await server.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: user.authorization })).statusCode, 204);
    assert.equal(await users().get(id), undefined);
    assert.equal(await users().findByEmail('gone@example.com'), undefined);
    const again = await createUser(server, { email: 'gone@example.com' });
    assert.notEqual(again, id);
    assert.equal((await users().findByEmail('GONE@example.com'))?.id, again);
  });
});

describeEachEngine('the remote user directory caches too (split mode)', (engine) => {
  let server: TestServer;
  let authUrl: string;
  before(async () => {
    server = await startTestServer(engine, { SERVICES: 'auth', RATE_LIMITS: 'off' });
    await server.app.listen({ port: 0, host: '127.0.0.1' });
    authUrl = `http://127.0.0.1:${(server.app.server.address() as { port: number }).port}`;
  });
  after(() => server.dispose());
  afterEach(() => mock.timers.reset());

  /** As the admin API does (that path is tested above): write, then announce on the auth process's bus. */
  const setReadonly = async (id: number) => {
    await server.database!.db.updateTable('users').set({ readonly: 1 }).where('id', '=', id).execute();
    await server.bus.publish('auth.user.changed', { userId: id });
  };

  it('with the change events (Redis between the processes), drops a changed user at once', async () => {
    // The auth process's bus stands in for this process's bus connected to it through Redis.
    const directory = new RemoteUserDirectory({ authUrl, internalToken: TEST_INTERNAL_TOKEN, changes: server.bus });
    try {
      const id = await createUser(server, { email: 'remote-followed@example.com' });
      assert.equal((await directory.get(id))?.readonly, false);
      assert.equal((await directory.findByEmail('remote-followed@example.com'))?.readonly, false);
      await setReadonly(id);
      assert.equal((await directory.get(id))?.readonly, true);
      assert.equal((await directory.findByEmail('remote-followed@example.com'))?.readonly, true);
    } finally {
      await directory.close();
    }
  });

  it('without them (no Redis), answers from memory for 2 seconds', async () => {
    const directory = new RemoteUserDirectory({ authUrl, internalToken: TEST_INTERNAL_TOKEN });
    try {
      const id = await createUser(server, { email: 'remote-unfollowed@example.com' });
      mock.timers.enable({ apis: ['Date'], now: Date.now() });
      assert.equal((await directory.get(id))?.readonly, false);
      await setReadonly(id);
      mock.timers.tick(1_999);
      assert.equal((await directory.get(id))?.readonly, false, 'still the cached answer');
      mock.timers.tick(1);
      assert.equal((await directory.get(id))?.readonly, true);
    } finally {
      await directory.close();
    }
  });
});
