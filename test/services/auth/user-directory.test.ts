import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it, mock } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { EventBus } from '../../../src/platform/bus.ts';
import { CachedUserDirectory } from '../../../src/services/auth/users/directory.ts';
import type { UserAccess } from '../../../src/services/auth/users/directory.ts';
import { InternalClient } from '../../../src/platform/http/internal-client.ts';
import { RemoteUserDirectory } from '../../../src/services/auth/users/remote-directory.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer, TEST_INTERNAL_TOKEN } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { signIn } from '../../support/api.ts';
import { createUser, PASSWORD } from './support/auth.ts';
import type { SignedInWithPassword } from '../../support/api.ts';

function access(id: number, email: string, fields: Partial<UserAccess> = {}): UserAccess {
  return { id, email, name: null, administrator: false, disabled: false, readonly: false, deviceReadonly: false, limitCommands: false, expirationTime: null, language: null, timezone: null, ...fields };
}

/** A directory over `stored`, counting reads, with a bus that announces changes. */
function setup(ttlMs = 60_000) {
  const stored = new Map<number, UserAccess>();
  const reads: string[] = [];
  const bus = new EventBus(pino({ level: 'silent' }) as unknown as FastifyBaseLogger);
  const directory = new CachedUserDirectory(
    {
      byId: async (id) => (reads.push(`id ${id}`), stored.get(id) && { ...stored.get(id)! }),
      byEmail: async (address) => (reads.push(address), [...stored.values()].find((user) => user.email === address)),
    },
    ttlMs,
    bus,
  );
  return { stored, reads, bus, directory };
}

describe('CachedUserDirectory', () => {
  it('answers by id and by e-mail address (any case) from memory once read', async () => {
    const { stored, reads, directory } = setup();
    stored.set(1, access(1, 'one@example.com'));
    assert.equal(directory.peek(1), undefined);
    await directory.get(1);
    assert.deepEqual(await directory.findByEmail('ONE@example.com'), access(1, 'one@example.com'));
    assert.deepEqual(directory.peek(1), access(1, 'one@example.com'));
    await directory.get(1);
    assert.deepEqual(reads, ['id 1'], 'the read by id indexed the address too');
    assert.ok(Object.isFrozen(await directory.get(1)), 'shared by every caller, so nobody may change it');
  });

  it('does not remember unknown users, so a new account is found at once', async () => {
    const { stored, directory } = setup();
    assert.equal(await directory.findByEmail('new@example.com'), undefined);
    assert.equal(await directory.get(2), undefined);
    stored.set(2, access(2, 'new@example.com'));
    assert.deepEqual(await directory.findByEmail('new@example.com'), access(2, 'new@example.com'));
    assert.deepEqual(await directory.get(2), access(2, 'new@example.com'));
  });

  it('forgets a changed or deleted user, and an address that moved to another account is read again', async () => {
    const { stored, reads, bus, directory } = setup();
    stored.set(1, access(1, 'moved@example.com'));
    stored.set(3, access(3, 'deleted@example.com'));
    await directory.findByEmail('moved@example.com');
    await directory.get(3);
    stored.set(1, access(1, 'elsewhere@example.com'));
    stored.set(2, access(2, 'moved@example.com'));
    stored.delete(3);
    await bus.publish('auth.user.changed', { userId: 1 });
    await bus.publish('auth.user.deleted', { userId: 3 });
    assert.equal((await directory.get(1))?.email, 'elsewhere@example.com');
    assert.equal((await directory.findByEmail('moved@example.com'))?.id, 2);
    assert.equal(await directory.get(3), undefined);
    assert.deepEqual(reads, ['moved@example.com', 'id 3', 'id 1', 'moved@example.com', 'id 3']);
  });

  it('answers a lookup that overlapped a change but does not keep it', async () => {
    const { stored, bus, directory } = setup();
    stored.set(1, access(1, 'one@example.com', { administrator: true }));
    const byId = directory.get(1);
    const byEmail = directory.findByEmail('one@example.com');
    // Both reads have taken the row; the change commits and is announced before they answer.
    stored.set(1, access(1, 'one@example.com'));
    await bus.publish('auth.user.changed', { userId: 1 });
    assert.equal((await byId)?.administrator, true);
    assert.equal((await byEmail)?.administrator, true);
    assert.equal(directory.peek(1), undefined, 'neither was kept');
    assert.equal((await directory.findByEmail('one@example.com'))?.administrator, false);
  });

  describe('expiry', () => {
    afterEach(() => mock.timers.reset());

    it('reads a user again once ttlMs has passed', async () => {
      mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
      const { stored, directory } = setup(2_000);
      stored.set(1, access(1, 'one@example.com'));
      await directory.get(1);
      stored.set(1, access(1, 'one@example.com', { readonly: true }));
      mock.timers.tick(1_999);
      assert.equal((await directory.get(1))?.readonly, false);
      mock.timers.tick(1);
      assert.equal((await directory.get(1))?.readonly, true);
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

  it('shows at once the administrator ensureAdministrator makes in place of a non-administrator at the address', async () => {
    const id = await createUser(server, { email: 'promoted-directory@example.com' });
    assert.equal((await users().get(id))?.administrator, false);
    await server.auth!.api.accounts.ensureAdministrator('promoted-directory@example.com', PASSWORD);
    assert.equal(await users().get(id), undefined);
    const administrator = await users().findByEmail('promoted-directory@example.com');
    assert.notEqual(administrator?.id, id);
    assert.equal(administrator?.administrator, true);
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
  let client: InternalClient;
  before(async () => {
    server = await startTestServer(engine, { SERVICES: 'auth', RATE_LIMITS: 'off' });
    await server.app.listen({ port: 0, host: '127.0.0.1' });
    const authUrl = `http://127.0.0.1:${(server.app.server.address() as { port: number }).port}`;
    client = new InternalClient({ baseUrl: authUrl, internalToken: TEST_INTERNAL_TOKEN, service: 'auth' });
  });
  after(async () => {
    await client.close();
    await server.dispose();
  });
  afterEach(() => mock.timers.reset());

  /** As the admin API does (that path is tested above): write, then announce on the auth process's bus. */
  const setReadonly = async (id: number) => {
    await server.database!.db.updateTable('users').set({ readonly: 1 }).where('id', '=', id).execute();
    await server.bus.publish('auth.user.changed', { userId: id });
  };

  it('with the change events (Redis between the processes), drops a changed user at once', async () => {
    // The auth process's bus stands in for this process's bus connected to it through Redis.
    const directory = new RemoteUserDirectory({ client, changes: server.bus });
    const id = await createUser(server, { email: 'remote-followed@example.com' });
    assert.equal((await directory.get(id))?.readonly, false);
    assert.equal((await directory.findByEmail('remote-followed@example.com'))?.readonly, false);
    await setReadonly(id);
    assert.equal((await directory.get(id))?.readonly, true);
    assert.equal((await directory.findByEmail('remote-followed@example.com'))?.readonly, true);
  });

  it('without them (no Redis), answers from memory for 2 seconds', async () => {
    const directory = new RemoteUserDirectory({ client });
    const id = await createUser(server, { email: 'remote-unfollowed@example.com' });
    mock.timers.enable({ apis: ['Date'], now: Date.now() });
    assert.equal((await directory.get(id))?.readonly, false);
    await setReadonly(id);
    mock.timers.tick(1_999);
    assert.equal((await directory.get(id))?.readonly, false, 'still the cached answer');
    mock.timers.tick(1);
    assert.equal((await directory.get(id))?.readonly, true);
  });
});
