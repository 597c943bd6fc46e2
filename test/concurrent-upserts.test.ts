import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import { signIn } from './support/api.ts';
import { describeEachEngine } from './support/engines.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';
import { Client, uniqueId } from './services/devices/helpers.ts';
import type { Reply } from './services/devices/helpers.ts';
import { createUser, totpAt } from './services/auth/support/auth.ts';
import { JwksIssuer } from './services/auth/openid/support/jwks-issuer.ts';
import { TwoFactorRepository } from '../src/services/auth/two-factor/repository.ts';
import { writeTestPlans } from './services/billing/support/plans.ts';
import { RecordingPushSender } from './services/notifications/helpers.ts';

/** Calls fired at once at every route that looks something up, then creates or replaces it. */
const PARALLEL = 8;
const AUDIENCE = 'concurrent-client.apps.example.com';
/** The overrides' plans; the default limits nothing, so the routes answer for themselves. */
const PLANS = [
  { id: 'free', name: 'Free', default: true },
  { id: 'pro', name: 'Pro', limits: { devices: 10 } },
  { id: 'team', name: 'Team', limits: { devices: 20 } },
];

interface Context {
  server: TestServer;
  issuer: JwksIssuer;
  admin: Client;
  user: Client;
}

/** Prepared before the calls fire. */
interface Prepared {
  /** What call `index` sends. */
  send(index: number): Promise<Reply>;
  /** The answers (none a 5xx) and the state read back hold together. */
  settled(replies: Reply[]): Promise<void>;
}

interface CreateOrReplace {
  name: string;
  prepare(context: Context): Promise<Prepared>;
}

const statuses = (replies: Reply[]) => replies.map((reply) => reply.status).sort();
const repeat = <T>(value: T, times = PARALLEL) => Array.from({ length: times }, () => value);

/** A user with TOTP on, and their backup codes. */
async function twoFactorUser(server: TestServer): Promise<{ client: Client; userId: number; backupCodes: string[] }> {
  const client = new Client(server, await signIn(server, `upsert-2fa-${randomUUID()}@example.com`));
  const { userId } = client;
  const setup = await client.post('/api/auth/2fa/setup');
  const verified = await client.post('/api/auth/2fa/verify', { code: totpAt(setup.body.secret, Date.now()) });
  assert.equal(verified.status, 200, JSON.stringify(verified.body));
  return { client, userId, backupCodes: verified.body.backup_codes };
}

const CREATE_OR_REPLACE: CreateOrReplace[] = [
  {
    name: 'POST /api/auth/2fa/setup: each answers a secret; one pending secret is stored, and one of them confirms',
    async prepare({ server }) {
      const client = new Client(server, await signIn(server, `upsert-setup-${randomUUID()}@example.com`));
      const { userId } = client;
      return {
        send: () => client.post('/api/auth/2fa/setup'),
        async settled(replies) {
          assert.deepEqual(statuses(replies), repeat(200));
          const rows = await server.database!.db.selectFrom('two_factor').selectAll().where('user_id', '=', userId).execute();
          assert.equal(rows.length, 1);
          assert.equal(rows[0]!.enabled_at, null);
          const confirmed: number[] = [];
          for (const reply of replies) confirmed.push((await client.post('/api/auth/2fa/verify', { code: totpAt(reply.body.secret, Date.now()) })).status);
          assert.equal(confirmed.filter((status) => status === 200).length, 1, `the stored secret is one of those answered: ${confirmed}`);
        },
      };
    },
  },
  {
    name: 'POST /api/auth/2fa/regenerate: each spends a backup code of its own; one set of 10 codes is left',
    async prepare({ server }) {
      const { client, userId, backupCodes } = await twoFactorUser(server);
      return {
        send: (index) => client.post('/api/auth/2fa/regenerate', { code: backupCodes[index] }),
        async settled(replies) {
          // A code is spent, or gone with the set a faster call replaced.
          for (const reply of replies) if (reply.status !== 200) assert.equal(reply.body.code, 'INVALID_2FA_CODE', JSON.stringify(reply.body));
          assert.ok(replies.some((reply) => reply.status === 200));
          const codes = await server.database!.db.selectFrom('backup_codes').select('used_at').where('user_id', '=', userId).execute();
          assert.equal(codes.length, 10, 'one set, not one per call');
          assert.ok(codes.every((code) => code.used_at === null));
        },
      };
    },
  },
  {
    name: 'POST /api/auth/2fa/email/setup: one code is issued and mailed, the 30 s cooldown holding for calls at once',
    async prepare({ server, user }) {
      return {
        send: () => user.post('/api/auth/2fa/email/setup'),
        async settled(replies) {
          assert.deepEqual(statuses(replies), repeat(200));
          const codes = await server.database!.db.selectFrom('one_time_tokens').select('consumed_at').where('user_id', '=', user.userId).where('purpose', '=', 'two_factor_email_setup').execute();
          assert.deepEqual(codes, [{ consumed_at: null }]);
        },
      };
    },
  },
  {
    name: 'POST /api/auth/openid/token: the first sign-in of one Google identity: one account, one link',
    async prepare({ server, issuer }) {
      const email = `upsert-google-${randomUUID()}@example.com`;
      const idToken = await issuer.sign({ aud: AUDIENCE, sub: `sub-${randomUUID()}`, email, email_verified: true });
      return {
        send: () => new Client(server).post('/api/auth/openid/token', { provider: 'google', id_token: idToken }),
        async settled(replies) {
          assert.deepEqual(statuses(replies), repeat(200), JSON.stringify(replies.map((reply) => reply.body)));
          const users = await server.database!.db.selectFrom('users').select('id').where('email', '=', email).execute();
          assert.equal(users.length, 1);
          assert.deepEqual(new Set(replies.map((reply) => reply.body.user.id)), new Set([users[0]!.id]));
          const links = await server.database!.db.selectFrom('openid_identities').select('user_id').where('email', '=', email).execute();
          assert.deepEqual(links, [{ user_id: users[0]!.id }]);
        },
      };
    },
  },
  {
    name: 'POST /api/notifications/targets: one token registered at once is one target',
    async prepare({ server, user }) {
      const token = `upsert-token-${randomUUID()}`;
      return {
        send: () => user.post('/api/notifications/targets', { kind: 'fcm', token }),
        async settled(replies) {
          assert.deepEqual(statuses(replies), [...repeat(200, PARALLEL - 1), 201]);
          const rows = await server.database!.db.selectFrom('notification_targets').select('id').where('user_id', '=', user.userId).execute();
          assert.equal(rows.length, 1);
          assert.deepEqual(new Set(replies.map((reply) => reply.body.id)), new Set([rows[0]!.id]));
        },
      };
    },
  },
  {
    name: 'POST /api/devices/{id}/shares: one address shared at once is one share',
    async prepare({ server, user }) {
      const friend = await signIn(server, `upsert-friend-${randomUUID()}@example.com`);
      const deviceId = (await user.post('/api/devices', { name: 'Shared', uniqueId: uniqueId('upsert-share') })).body.id as number;
      return {
        send: () => user.post(`/api/devices/${deviceId}/shares`, { email: friend.email, permissions: { position: true } }),
        async settled(replies) {
          assert.deepEqual(statuses(replies), [201, ...repeat(409, PARALLEL - 1)]);
          for (const reply of replies) if (reply.status === 409) assert.equal(reply.body.code, 'SHARE_EXISTS');
          const rows = await server.database!.db.selectFrom('device_shares').select('user_id').where('device_id', '=', deviceId).execute();
          assert.deepEqual(rows, [{ user_id: friend.userId }]);
        },
      };
    },
  },
  {
    name: 'POST /api/devices/claim: one token claimed at once by its buyer is one device, claimed once',
    async prepare({ server, admin, user }) {
      const { token } = (await admin.post('/api/devices/claim-tokens', { uniqueId: uniqueId('upsert-claim'), modelCode: 'UP-1' })).body as { token: string };
      return {
        send: () => user.post('/api/devices/claim', { token }),
        async settled(replies) {
          assert.deepEqual(statuses(replies), repeat(200));
          assert.deepEqual(replies.map((reply) => reply.body.alreadyClaimed).sort(), [false, ...repeat(true, PARALLEL - 1)]);
          const devices = await server.database!.db.selectFrom('devices').select('id').where('owner_id', '=', user.userId).execute();
          assert.equal(devices.length, 1);
          assert.deepEqual(new Set(replies.map((reply) => reply.body.device.id)), new Set([devices[0]!.id]));
          const tokens = await server.database!.db.selectFrom('claim_tokens').select(['status', 'claimed_by']).where('device_id', '=', devices[0]!.id).execute();
          assert.deepEqual(tokens, [{ status: 'claimed', claimed_by: user.userId }]);
        },
      };
    },
  },
  {
    name: 'POST /api/devices/claim-tokens: one uniqueId provisioned at once is one token',
    async prepare({ server, admin }) {
      const deviceUniqueId = uniqueId('upsert-provision');
      return {
        send: () => admin.post('/api/devices/claim-tokens', { uniqueId: deviceUniqueId, modelCode: 'UP-2' }),
        async settled(replies) {
          assert.deepEqual(statuses(replies), [201, ...repeat(409, PARALLEL - 1)]);
          for (const reply of replies) if (reply.status === 409) assert.equal(reply.body.code, 'CLAIM_TOKEN_EXISTS');
          const rows = await server.database!.db.selectFrom('claim_tokens').select('token').where('unique_id', '=', deviceUniqueId).execute();
          assert.equal(rows.length, 1);
        },
      };
    },
  },
  {
    name: 'PUT /api/subscriptions/{user_id}/plan: overrides set at once leave one, which the plan answers',
    async prepare({ server, admin, user }) {
      return {
        send: (index) => admin.put(`/api/subscriptions/${user.userId}/plan`, { planId: index % 2 === 0 ? 'pro' : 'team' }),
        async settled(replies) {
          assert.deepEqual(statuses(replies), repeat(200));
          const rows = await server.database!.db.selectFrom('billing_plan_overrides').select('plan_id').where('user_id', '=', user.userId).execute();
          assert.equal(rows.length, 1);
          assert.equal((await admin.get(`/api/subscriptions/${user.userId}`)).body.plan.id, rows[0]!.plan_id);
        },
      };
    },
  },
];

describeEachEngine('create-or-replace routes under parallel calls', (engine) => {
  let issuer: JwksIssuer;
  let server: TestServer;

  before(async () => {
    issuer = await JwksIssuer.start();
    server = await startTestServer(
      engine,
      { RATE_LIMITS: 'off', PLANS_FILE: writeTestPlans(PLANS), OIDC_GOOGLE_ISSUER: issuer.issuer, OIDC_GOOGLE_AUDIENCES: AUDIENCE },
      { pushSenders: new Map([['fcm', new RecordingPushSender()]]) },
    );
  });
  after(async () => {
    await server?.dispose();
    await issuer?.close();
  });

  it(`backup code sets replaced ${PARALLEL} at once leave one set (the repository, below the hashing that spaces the route's calls)`, async () => {
    const userId = await createUser(server, { email: `upsert-codes-${randomUUID()}@example.com` });
    const repository = new TwoFactorRepository(server.database!.db);
    const sets = Array.from({ length: PARALLEL }, (_, set) => Array.from({ length: 10 }, (_, code) => `hash-${set}-${code}`));
    await Promise.all(sets.map((hashes) => repository.replaceBackupCodes(userId, hashes, Date.now())));
    const stored = await server.database!.db.selectFrom('backup_codes').select('code_hash').where('user_id', '=', userId).orderBy('code_hash').execute();
    assert.ok(
      sets.some((hashes) => JSON.stringify([...hashes].sort()) === JSON.stringify(stored.map((row) => row.code_hash))),
      `one whole set: ${stored.length} codes`,
    );
  });

  for (const route of CREATE_OR_REPLACE) {
    it(`${route.name} (${PARALLEL} at once)`, async () => {
      const admin = new Client(server, await signIn(server, `upsert-admin-${randomUUID()}@example.com`, { administrator: true }));
      const user = new Client(server, await signIn(server, `upsert-user-${randomUUID()}@example.com`));
      const context = { server, issuer, admin, user };
      const prepared = await route.prepare(context);
      const replies = await Promise.all(Array.from({ length: PARALLEL }, (_, index) => prepared.send(index)));
      assert.deepEqual(
        replies.filter((reply) => reply.status >= 500),
        [],
        'no 5xx',
      );
      await prepared.settled(replies);
    });
  }
});
