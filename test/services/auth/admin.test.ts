import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { promisify } from 'node:util';
import { loadConfig } from '../../../src/config.ts';
import { openDatabase } from '../../../src/platform/db/database.ts';
import { createServer } from '../../../src/server.ts';
import type { Server, ServerOptions } from '../../../src/server.ts';
import type { NotificationsTestHooks } from '../../../src/services/notifications/module.ts';
import { runUserCommand } from '../../../src/services/auth/cli.ts';
import { verifyPassword } from '../../../src/services/auth/users/passwords.ts';
import { InternalClient } from '../../../src/platform/http/internal-client.ts';
import { RemoteUserDirectory } from '../../../src/services/auth/users/remote-directory.ts';
import { createSharedDatabase, describeEachEngine } from '../../support/engines.ts';
import type { SharedTestDatabase } from '../../support/engines.ts';
import { NO_DEVICE_LISTENERS, NO_METRICS, TEST_EVENT_CHANNEL, TEST_INTERNAL_TOKEN, startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { Client } from '../devices/helpers.ts';
import { RecordingPushSender, WebhookReceiver } from '../notifications/helpers.ts';
import { assertError, signIn } from '../../support/api.ts';
import { createUser, login, PASSWORD, postJson, storedUser, totpAt } from './support/auth.ts';
import type { SignedInWithPassword } from '../../support/api.ts';

const ADMIN_EMAIL = 'root@example.com';
const ADMIN_PASSWORD = 'Admin-Password-2025';
const CLI = path.resolve(import.meta.dirname, '../../../src/cli/main.ts');
const run = promisify(execFile);

describeEachEngine('auth administrators', (engine) => {
  let server: TestServer;
  let admin: SignedInWithPassword;
  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off', ADMIN_EMAIL, ADMIN_PASSWORD });
    admin = await signIn(server, ADMIN_EMAIL, { password: ADMIN_PASSWORD });
  });
  after(() => server.dispose());

  const list = (query: string, bearer = admin.authorization) => server.app.inject({ url: `/api/auth/users${query}`, headers: bearer });
  const put = (id: number, payload: unknown, bearer = admin.authorization) =>
    server.app.inject({ method: 'PUT', url: `/api/auth/users/${id}`, headers: bearer, payload: payload as object });

  it('ADMIN_EMAIL/ADMIN_PASSWORD ensure a verified administrator at start', async () => {
    const profile = (await server.app.inject({ url: '/api/auth/profile', headers: admin.authorization })).json();
    assert.equal(profile.administrator, true);
    assert.equal(profile.attributes.emailVerified, true);
  });

  it('refuses to start with a weak ADMIN_PASSWORD', { skip: engine.name !== 'sqlite' && 'checked once' }, async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-weak-admin-'));
    const database = openDatabase({ engine: 'sqlite', file: ':memory:' });
    try {
      const config = loadConfig({ DATA_DIR: dataDir, DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent', ADMIN_EMAIL: 'weak@example.com', ADMIN_PASSWORD: 'password', ...NO_DEVICE_LISTENERS, ...NO_METRICS });
      await assert.rejects(createServer(config, { database }), /ADMIN_PASSWORD: The password must contain an uppercase letter/);
    } finally {
      await database.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('ensuring an existing administrator re-enables, verifies and un-expires it, and keeps its password', async () => {
    const id = await createUser(server, { email: 'restored@example.com', verified: false, administrator: true });
    await server.database!.db.updateTable('users').set({ disabled: 1, expiration_time: Date.now() - 1000 }).where('id', '=', id).execute();
    const { outcome } = await server.auth!.api.accounts.ensureAdministrator('restored@example.com', 'Other-Password-99');
    assert.equal(outcome, 'restored');
    const user = await server.auth!.api.users.get(id);
    assert.deepEqual([user?.administrator, user?.disabled, user?.expirationTime], [true, false, null]);
    assert.equal((await login(server, 'restored@example.com')).statusCode, 200, 'password kept, verified');
    assertError(await login(server, 'restored@example.com', 'Other-Password-99'), 401, 'INVALID_CREDENTIALS');
  });

  it('lists accounts a page at a time and searches by e-mail', async () => {
    for (const name of ['alpha', 'beta', 'gamma']) await createUser(server, { email: `${name}.search@list.example` });
    await createUser(server, { email: 'percent%sign@list.example' });
    const page = await list('?search=SEARCH@LIST&limit=2&page=1');
    assert.equal(page.statusCode, 200, page.body);
    assert.equal(page.json().total, 3);
    assert.equal(page.json().page, 1);
    assert.equal(page.json().limit, 2);
    assert.deepEqual(page.json().users.map((user: { email: string }) => user.email), ['alpha.search@list.example', 'beta.search@list.example']);
    const second = (await list('?search=search@list&limit=2&page=2')).json();
    assert.deepEqual(second.users.map((user: { email: string }) => user.email), ['gamma.search@list.example']);
    assert.equal((await list('?search=%25sign')).json().total, 1, '% is matched literally');
    assert.equal((await list('?search=_')).json().total, 0, '_ is matched literally');
    const all = (await list('')).json();
    assert.equal(all.limit, 50);
    assert.ok(all.total >= 5);
    assert.ok(all.users.every((user: { attributes: object }) => 'twoFactorEnabled' in user.attributes));
    for (const query of ['?limit=0', '?limit=101', '?page=0', '?page=x', `?search=${'a'.repeat(255)}`]) {
      assertError(await list(query), 400, 'VALIDATION_FAILED');
    }
  });

  it('non-administrators get 403 and change nothing', async () => {
    const id = await createUser(server, { email: 'plain@example.com' });
    const plain = await signIn(server, 'plain@example.com', { password: PASSWORD });
    assertError(await list('', plain.authorization), 403, 'FORBIDDEN');
    assertError(await server.app.inject({ url: `/api/auth/users/${id}`, headers: plain.authorization }), 403, 'FORBIDDEN');
    assertError(await put(id, { administrator: true }, plain.authorization), 403, 'FORBIDDEN');
    assert.equal((await storedUser(server, 'plain@example.com'))?.administrator, false);
    assertError(await list('', {} as { authorization: string }), 401, 'UNAUTHORIZED');
  });

  it('sets every access flag; other modules see them through the user directory', async () => {
    const id = await createUser(server, { email: 'flags@example.com' });
    const response = await put(id, { readonly: true, deviceReadonly: true, limitCommands: true, administrator: true });
    assert.equal(response.statusCode, 200, response.body);
    const user = response.json();
    assert.deepEqual(
      [user.readonly, user.deviceReadonly, user.limitCommands, user.administrator, user.disabled, user.expirationTime],
      [true, true, true, true, false, null],
    );
    assert.deepEqual((await server.app.inject({ url: `/api/auth/users/${id}`, headers: admin.authorization })).json(), user);
    const seen = await server.auth!.api.users.get(id);
    assert.equal(seen?.deviceReadonly, true);
    assert.equal(seen?.limitCommands, true);
    assert.equal(seen?.readonly, true);
    const cleared = (await put(id, { readonly: false })).json();
    assert.equal(cleared.readonly, false);
    assert.equal(cleared.deviceReadonly, true, 'absent fields stay');
  });

  it('disabling signs the user out everywhere at once; enabling lets them sign in again', async () => {
    const id = await createUser(server, { email: 'to-disable@example.com' });
    const session = await signIn(server, 'to-disable@example.com', { password: PASSWORD });
    assert.equal((await put(id, { disabled: true })).json().disabled, true);
    assertError(await server.app.inject({ url: '/api/auth/profile', headers: session.authorization }), 401, 'INVALID_TOKEN');
    assertError(await server.app.inject({ url: '/api/auth/validate', headers: session.authorization }), 401, 'INVALID_TOKEN');
    assertError(await server.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: session.refreshToken } }), 401, 'INVALID_TOKEN');
    assertError(await login(server, 'to-disable@example.com'), 403, 'ACCOUNT_DISABLED');
    await put(id, { disabled: false });
    assert.equal((await login(server, 'to-disable@example.com')).statusCode, 200);
  });

  it('an expiration time in the past ends the sessions; in the future it is kept; null clears it', async () => {
    const id = await createUser(server, { email: 'to-expire@example.com' });
    const session = await signIn(server, 'to-expire@example.com', { password: PASSWORD });
    assert.equal((await server.app.inject({ url: '/api/auth/validate', headers: session.authorization })).statusCode, 200);
    const future = new Date(Date.now() + 86_400_000).toISOString();
    assert.equal((await put(id, { expirationTime: future })).json().expirationTime, future);
    assert.equal((await server.app.inject({ url: '/api/auth/validate', headers: session.authorization })).statusCode, 200);
    const past = new Date(Date.now() - 1000).toISOString();
    assert.equal((await put(id, { expirationTime: past })).json().expirationTime, past);
    assertError(await server.app.inject({ url: '/api/auth/validate', headers: session.authorization }), 401, 'INVALID_TOKEN');
    assertError(await login(server, 'to-expire@example.com'), 403, 'ACCOUNT_EXPIRED');
    assert.equal((await put(id, { expirationTime: null })).json().expirationTime, null);
    assert.equal((await login(server, 'to-expire@example.com')).statusCode, 200);
  });

  it('an expiration time that passes refuses every request of the account at once: profile, device and geofence creation', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    const id = await createUser(server, { email: 'runs-out@example.com' });
    const session = await signIn(server, 'runs-out@example.com', { password: PASSWORD });
    const expiresAt = new Date(Date.now() + 30_000).toISOString();
    assert.equal((await put(id, { expirationTime: expiresAt })).json().expirationTime, expiresAt);
    const profile = () => server.app.inject({ url: '/api/auth/profile', headers: session.authorization });
    const createDevice = () => server.app.inject({ method: 'POST', url: '/api/devices', headers: session.authorization, payload: { name: 'Van', uniqueId: 'runs-out-1' } });
    const createGeofence = () =>
      server.app.inject({ method: 'POST', url: '/api/geofences', headers: session.authorization, payload: { name: 'Depot', area: 'CIRCLE (52.5 13.4, 100)' } });
    assert.equal((await profile()).statusCode, 200, 'before the expiration time');

    t.mock.timers.tick(30_000);
    assertError(await profile(), 403, 'ACCOUNT_EXPIRED');
    assertError(await createDevice(), 403, 'ACCOUNT_EXPIRED');
    assertError(await createGeofence(), 403, 'ACCOUNT_EXPIRED');
    const devices = await server.database!.db.selectFrom('devices').select('id').where('unique_id', '=', 'runs-out-1').execute();
    const geofences = await server.database!.db.selectFrom('geofences').select('id').where('owner_id', '=', id).execute();
    assert.deepEqual([devices.length, geofences.length], [0, 0], 'nothing was created');

    assert.equal((await put(id, { expirationTime: null })).statusCode, 200);
    assert.equal((await profile()).statusCode, 200, 'cleared by an administrator, the same token works again');
  });

  it('refuses to lock an administrator out of their own account, and bad input, changing nothing', async () => {
    for (const payload of [{ disabled: true }, { administrator: false }, { expirationTime: new Date(Date.now() + 60_000).toISOString() }]) {
      assertError(await put(admin.userId, payload), 400, 'CANNOT_CHANGE_OWN_ACCESS');
    }
    assert.equal((await put(admin.userId, { limitCommands: false })).statusCode, 200, 'harmless own changes are fine');
    const id = await createUser(server, { email: 'put-bad@example.com' });
    for (const payload of [{ disabled: 'yes' }, { expirationTime: 'tomorrow' }, { expirationTime: 5 }, { email: 'x@example.com' }, { attributes: {} }]) {
      assertError(await put(id, payload), 400, 'VALIDATION_FAILED');
    }
    assertError(await put(999_999, { disabled: true }), 404, 'USER_NOT_FOUND');
    assertError(await server.app.inject({ url: '/api/auth/users/999999', headers: admin.authorization }), 404, 'USER_NOT_FOUND');
    assertError(await server.app.inject({ url: '/api/auth/users/abc', headers: admin.authorization }), 400, 'VALIDATION_FAILED');
    const stored = await server.auth!.api.users.get(id);
    assert.deepEqual([stored?.disabled, stored?.expirationTime], [false, null]);
    assert.equal((await server.auth!.api.users.get(admin.userId))?.administrator, true);
  });

  it('internal user routes are never reachable through the gateway', async () => {
    const response = await server.app.inject({ url: `/api/auth/internal/users/${admin.userId}`, headers: { 'x-internal-token': TEST_INTERNAL_TOKEN } });
    assertError(response, 404, 'NOT_FOUND');
  });
});

describeEachEngine('ADMIN_EMAIL naming an account someone else registered', (engine) => {
  const TAKEN = 'ops-to-be@example.com';
  const SQUATTER_PASSWORD = 'Squatter-Password-77';
  let shared: SharedTestDatabase;
  let running: Server | undefined;
  before(async () => {
    shared = await createSharedDatabase(engine, 'trackstack-admin-takeover-');
  });
  after(async () => {
    await running?.close();
    await shared.dispose();
  });

  /** A server on the shared database and data folder (hence the same signing key), as after a restart. */
  async function restart(env: Record<string, string> = {}, options: ServerOptions = {}): Promise<Server> {
    await running?.close();
    running = await createServer(
      loadConfig({
        DATA_DIR: shared.dataDir,
        DATABASE_URL: shared.url,
        LOG_LEVEL: 'silent',
        INTERNAL_TOKEN: TEST_INTERNAL_TOKEN,
        EVENT_CHANNEL: TEST_EVENT_CHANNEL,
        RATE_LIMITS: 'off',
        ...NO_DEVICE_LISTENERS,
        ...NO_METRICS,
        ...env,
      }),
      options,
    );
    return running;
  }
  const inject = (server: Server, url: string, options: { method?: 'POST' | 'GET'; headers?: Record<string, string>; payload?: object } = {}) =>
    server.app.inject({ url, ...options });

  it('start-up deletes the account, ending every credential the squatter had, and a new administrator takes the address', async () => {
    const before = await restart();
    const user = await before.auth!.api.accounts.create({ email: TAKEN, password: SQUATTER_PASSWORD, emailVerified: true });
    const squatter = (await login(before, TAKEN, SQUATTER_PASSWORD)).json();
    const bearer = { authorization: `Bearer ${squatter.accessToken}` };
    const setup = (await inject(before, '/api/auth/2fa/setup', { method: 'POST', headers: bearer })).json();
    const enabled = await inject(before, '/api/auth/2fa/verify', { method: 'POST', headers: bearer, payload: { code: totpAt(setup.secret, Date.now()) } });
    assert.equal(enabled.statusCode, 200, enabled.body);
    const backupCode = enabled.json().backup_codes[0] as string;
    const pending = await login(before, TAKEN, SQUATTER_PASSWORD);
    assert.equal(pending.statusCode, 202, pending.body);
    await before.database!.db
      .insertInto('openid_identities')
      .values({ provider: 'google', subject: 'squatter-sub', user_id: user.id, email: TAKEN, email_verified: 1, created_at: Date.now(), last_used_at: Date.now() })
      .execute();

    const after = await restart({ ADMIN_EMAIL: TAKEN, ADMIN_PASSWORD });
    assertError(await inject(after, '/api/auth/profile', { headers: bearer }), 401, 'INVALID_TOKEN');
    assertError(await postJson(after, '/api/auth/refresh', { refreshToken: squatter.refreshToken }), 401, 'INVALID_TOKEN');
    assertError(await postJson(after, '/api/auth/2fa/login', { temp_token: pending.json().temp_token, code: backupCode }), 401, 'TEMP_TOKEN_EXPIRED');
    assertError(await login(after, TAKEN, SQUATTER_PASSWORD), 401, 'INVALID_CREDENTIALS');

    const operator = await login(after, TAKEN, ADMIN_PASSWORD);
    assert.equal(operator.statusCode, 200, `ADMIN_PASSWORD signs in with one step: 2FA is gone (${operator.body})`);
    assert.notEqual(operator.json().user.id, user.id, 'a new account, not the squatter\'s');
    assert.equal(operator.json().user.administrator, true);
    assert.equal(operator.json().user.attributes.twoFactorEnabled, false);
    const db = after.database!.db;
    assert.equal(await db.selectFrom('users').select('id').where('id', '=', user.id).executeTakeFirst(), undefined, 'the squatter\'s account is gone');
    for (const table of ['two_factor', 'backup_codes', 'openid_identities'] as const) {
      assert.deepEqual(await db.selectFrom(table).select('user_id').where('user_id', '=', user.id).execute(), [], `${table} emptied`);
    }
  });

  it('removes every device, share, notification rule, push target and saved command the squatter made; the administrator\'s alarms reach none of them', async () => {
    const email = 'ops-later@example.com';
    const receiver = await WebhookReceiver.start();
    const push = new RecordingPushSender();
    const hooks = { notifications: { pushSenders: new Map([['fcm', push]]) as NotificationsTestHooks['pushSenders'] } };
    const env = { NOTIFY_ALLOW_PRIVATE_URLS: 'true' };
    try {
      const before = await restart(env, { hooks });
      await before.auth!.api.accounts.create({ email, password: SQUATTER_PASSWORD, emailVerified: true });
      const squatter = new Client(before, await signIn(before, email, { password: SQUATTER_PASSWORD }));
      const friend = await signIn(before, 'squatters-friend@example.com');
      const device = await squatter.post('/api/devices/', { name: 'Squatter van', uniqueId: 'squatter-van' });
      assert.equal(device.status, 201, JSON.stringify(device.body));
      const share = await squatter.post(`/api/devices/${device.body.id}/shares`, { email: friend.email, permissions: { position: true, events: true } });
      assert.equal(share.status, 201, JSON.stringify(share.body));
      const webhookRule = await squatter.post('/api/notifications', { type: 'alarm', always: true, channels: ['webhook'], attributes: { webhookUrl: receiver.url } });
      assert.equal(webhookRule.status, 201, JSON.stringify(webhookRule.body));
      receiver.secret = webhookRule.body.webhookSecret;
      const pushRule = await squatter.post('/api/notifications', { type: 'alarm', always: true, channels: ['fcm'] });
      assert.equal(pushRule.status, 201, JSON.stringify(pushRule.body));
      assert.equal((await squatter.post('/api/notifications/targets', { kind: 'fcm', token: 'squatter-phone' })).status, 201);
      const saved = await squatter.post('/api/commands', { description: 'Stop it', type: 'engineStop' });
      assert.equal(saved.status, 201, JSON.stringify(saved.body));
      const squatterId = squatter.userId;

      const after = await restart({ ...env, ADMIN_EMAIL: email, ADMIN_PASSWORD }, { hooks });
      await after.outbox!.drainNow();
      const admin = new Client(after, await signIn(after, email, { password: ADMIN_PASSWORD }));
      assert.notEqual(admin.userId, squatterId);
      const db = after.database!.db;
      assert.deepEqual(await db.selectFrom('devices').select('id').where('owner_id', '=', squatterId).execute(), [], 'devices');
      assert.deepEqual(await db.selectFrom('device_shares').select('user_id').where('device_id', '=', device.body.id).execute(), [], 'shares');
      assert.deepEqual(await db.selectFrom('notification_rules').select('id').where('user_id', '=', squatterId).execute(), [], 'rules');
      assert.deepEqual(await db.selectFrom('notification_targets').select('id').where('user_id', '=', squatterId).execute(), [], 'push targets');
      assert.deepEqual(await db.selectFrom('saved_commands').select('id').where('user_id', '=', squatterId).execute(), [], 'saved commands');
      // As the administrator and the friend see it: administrators list every saved command, so none is left at all.
      assert.equal((await admin.get(`/api/devices/${device.body.id}`)).status, 404);
      assert.deepEqual((await admin.get('/api/notifications')).body, []);
      assert.deepEqual((await admin.get('/api/notifications/targets')).body, []);
      assert.deepEqual((await admin.get('/api/commands')).body, []);
      assert.deepEqual((await new Client(after, friend).get('/api/devices/')).body, []);

      const own = await admin.post('/api/devices/', { name: 'Operator car', uniqueId: 'operator-car' });
      assert.equal(own.status, 201, JSON.stringify(own.body));
      await after.tracking!.api.storeEvents([{ type: 'alarm', eventTime: Date.now(), deviceId: own.body.id, attributes: { alarm: 'sos' } }]);
      await after.outbox!.drainNow();
      await after.notifications!.worker.drainNow();
      assert.deepEqual(receiver.received, [], 'no squatter webhook heard of the alarm');
      assert.deepEqual(push.sent, [], 'no squatter phone heard of it');
    } finally {
      await receiver.close();
    }
  });

  it('a later start leaves the administrator alone: a password they changed stays', async () => {
    const server = await restart({ ADMIN_EMAIL: TAKEN, ADMIN_PASSWORD });
    const token = (await login(server, TAKEN, ADMIN_PASSWORD)).json().accessToken as string;
    const changed = await inject(server, '/api/auth/change-password', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      payload: { currentPassword: ADMIN_PASSWORD, newPassword: 'Changed-By-Operator-1' },
    });
    assert.equal(changed.statusCode, 200, changed.body);
    const again = await restart({ ADMIN_EMAIL: TAKEN, ADMIN_PASSWORD });
    assert.equal((await login(again, TAKEN, 'Changed-By-Operator-1')).statusCode, 200);
    assert.equal((await inject(again, '/api/auth/profile', { headers: { authorization: `Bearer ${token}` } })).statusCode, 200, 'its session lives on');
  });
});

describeEachEngine('auth internal user routes and the remote user directory (split mode)', (engine) => {
  let server: TestServer;
  let authUrl: string;
  let client: InternalClient;
  let directory: RemoteUserDirectory;
  before(async () => {
    server = await startTestServer(engine, { SERVICES: 'auth', RATE_LIMITS: 'off' });
    await server.app.listen({ port: 0, host: '127.0.0.1' });
    authUrl = `http://127.0.0.1:${(server.app.server.address() as { port: number }).port}`;
    client = new InternalClient({ baseUrl: authUrl, internalToken: TEST_INTERNAL_TOKEN, service: 'auth' });
    directory = new RemoteUserDirectory({ client });
  });
  after(async () => {
    await client.close();
    await server.dispose();
  });

  it('answers what the local directory answers, and undefined for unknown users', async () => {
    const id = await createUser(server, { email: 'Remote@Example.com', name: 'Remote' });
    await server.database!.db.updateTable('users').set({ device_readonly: 1, expiration_time: 1_900_000_000_000 }).where('id', '=', id).execute();
    const local = await server.auth!.api.users.get(id);
    assert.deepEqual(await directory.get(id), local);
    assert.deepEqual(await directory.findByEmail('REMOTE@example.com'), local);
    assert.equal(local?.deviceReadonly, true);
    assert.equal(local?.expirationTime, 1_900_000_000_000);
    assert.equal(await directory.get(987_654), undefined);
    assert.equal(await directory.findByEmail('nobody@example.com'), undefined);
  });

  it('refuses callers without the internal token', async () => {
    const id = await createUser(server, { email: 'remote-guard@example.com' });
    assertError(await server.app.inject({ url: `/api/auth/internal/users/${id}` }), 403, 'FORBIDDEN');
    assertError(await server.app.inject({ url: `/api/auth/internal/users/${id}`, headers: { 'x-internal-token': 'wrong' } }), 403, 'FORBIDDEN');
    const strangerClient = new InternalClient({ baseUrl: authUrl, internalToken: 'not-the-internal-token-at-all-0123', service: 'auth' });
    const stranger = new RemoteUserDirectory({ client: strangerClient });
    await assert.rejects(stranger.get(id), /403/);
    await strangerClient.close();
  });
});

describeEachEngine('auth CLI: user create', (engine) => {
  let dataDir: string;
  let url: string;
  let dispose: () => Promise<void>;
  before(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-cli-'));
    if (engine.name === 'sqlite') {
      url = `sqlite:${path.join(dataDir, 'cli.db')}`;
      dispose = async () => {};
    } else {
      const created = await engine.createDatabase();
      url = created.url;
      dispose = created.dispose;
    }
  });
  after(async () => {
    await dispose();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const spawnCli = (...args: string[]) =>
    run(process.execPath, [CLI, 'user', ...args], { env: { PATH: process.env.PATH, DATA_DIR: dataDir, DATABASE_URL: url } }).then(
      (result) => ({ code: 0, ...result }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
    );
  const command = (...args: string[]) => runUserCommand(loadConfig({ DATA_DIR: dataDir, DATABASE_URL: url }), args);

  it('creates a verified administrator, refuses duplicates and weak passwords, generates a password when none is given', async () => {
    const created = await spawnCli('create', '--admin', '--email', 'Ops@Example.com', '--password', PASSWORD, '--name', 'Ops');
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /Created administrator ops@example.com/);
    const duplicate = await command('create', '--email', 'ops@example.com', '--password', PASSWORD);
    assert.equal(duplicate.exitCode, 1);
    assert.match(duplicate.output, /already exists/);
    const weak = await command('create', '--email', 'weak@example.com', '--password', 'password');
    assert.equal(weak.exitCode, 1);
    assert.match(weak.output, /uppercase/);
    const generated = await command('create', '--email', 'generated@example.com');
    assert.equal(generated.exitCode, 0, generated.output);
    const password = /Password: (\S+)/.exec(generated.output)?.[1];
    assert.ok(password);
    for (const args of [[], ['create'], ['delete', '--email', 'a@example.com'], ['create', '--email', 'not-an-address'], ['create', '--mail', 'x']]) {
      assert.equal((await command(...args)).exitCode, 1, args.join(' '));
    }

    const database = openDatabase(engine.name === 'sqlite' ? { engine: 'sqlite', file: url.slice('sqlite:'.length) } : { engine: 'postgres', url });
    try {
      const rows = (await database.db.selectFrom('users').selectAll().orderBy('id').execute()) as {
        email: string;
        administrator: number;
        email_verified_at: number | null;
        name: string;
        password_hash: string;
      }[];
      assert.deepEqual(rows.map((row) => row.email), ['ops@example.com', 'generated@example.com']);
      const [ops, gen] = rows;
      assert.equal(ops?.administrator, 1);
      assert.equal(ops?.name, 'Ops');
      assert.notEqual(ops?.email_verified_at, null);
      assert.equal(await verifyPassword(ops!.password_hash, PASSWORD), true);
      assert.equal(gen?.administrator, 0);
      assert.equal(await verifyPassword(gen!.password_hash, password), true);
    } finally {
      await database.close();
    }
  });
});
