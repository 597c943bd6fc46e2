import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { createServer } from '../src/server.ts';
import type { Server } from '../src/server.ts';
import { signIn } from './support/api.ts';
import { createSharedDatabase, describeEachEngine } from './support/engines.ts';
import type { SharedTestDatabase } from './support/engines.ts';
import { NO_DEVICE_LISTENERS, NO_METRICS, TEST_INTERNAL_TOKEN, startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';
import { Client, uniqueId } from './services/devices/helpers.ts';
import type { Reply } from './services/devices/helpers.ts';
import { writeTestPlans } from './services/billing/support/plans.ts';
import { RecordingPushSender } from './services/notifications/helpers.ts';

/** Requests fired at once at every capped create. */
const PARALLEL = 20;
const PLAN_LIMIT = 3;
const SERVER_CAP = 2;
/** MAX_GEOFENCE_POINTS_PER_USER of the points server. */
const POINTS_CAP = 32;

const PLANS = [{ id: 'small', name: 'Small', default: true, limits: { devices: PLAN_LIMIT, geofences: PLAN_LIMIT, shares: PLAN_LIMIT, notificationRules: PLAN_LIMIT } }];

/** The three configurations the creates are capped by: a plan's limits, the MAX_* server caps, and the geofence points cap. */
type ServerKind = 'plan' | 'caps' | 'points';

const SERVER_ENV: Record<ServerKind, () => Record<string, string>> = {
  plan: () => ({ PLANS_FILE: writeTestPlans(PLANS) }),
  caps: () => ({
    MAX_DEVICES_PER_USER: String(SERVER_CAP),
    MAX_SHARES_PER_DEVICE: String(SERVER_CAP),
    MAX_GEOFENCES_PER_USER: String(SERVER_CAP),
    MAX_NOTIFICATION_RULES_PER_USER: String(SERVER_CAP),
    MAX_PUSH_TARGETS_PER_USER: String(SERVER_CAP),
  }),
  points: () => ({ MAX_GEOFENCE_POINTS_PER_USER: String(POINTS_CAP) }),
};

/** A closed POLYGON of `points` points (the first repeated last). */
function polygon(points: number): string {
  const corners = Array.from({ length: points - 1 }, (_, index) => {
    const angle = (2 * Math.PI * index) / (points - 1);
    return `${(10 + Math.sin(angle)).toFixed(6)} ${(20 + Math.cos(angle)).toFixed(6)}`;
  });
  return `POLYGON ((${[...corners, corners[0]].join(', ')}))`;
}

interface Context {
  server: TestServer;
  admin: Client;
  user: Client;
}

/** Prepared before the requests fire: what request `index` sends. */
type Prepare = (context: Context) => Promise<(index: number) => Promise<Reply>>;

interface CappedCreate {
  name: string;
  server: ServerKind;
  prepare: Prepare;
  /** How many of the parallel requests may succeed. */
  allowed: number;
  /** `limit`: what the error's details name, when it has them. */
  refusal: { status: number; code: string; limit?: string };
  /** What the cap counts, read back from the database. */
  stored: (context: Context) => Promise<number>;
}

const count = async (query: { executeTakeFirstOrThrow(): Promise<{ count: unknown }> }) => Number((await query.executeTakeFirstOrThrow()).count);
const ownedDevices = ({ server, user }: Context) =>
  count(server.database!.db.selectFrom('devices').select((eb) => eb.fn.countAll().as('count')).where('owner_id', '=', user.userId));
const ownedGeofences = ({ server, user }: Context) =>
  count(server.database!.db.selectFrom('geofences').select((eb) => eb.fn.countAll().as('count')).where('owner_id', '=', user.userId));
const geofencePoints = ({ server, user }: Context) =>
  count(server.database!.db.selectFrom('geofences').select((eb) => eb.fn.coalesce(eb.fn.sum('points'), eb.val(0)).as('count')).where('owner_id', '=', user.userId));
const rules = ({ server, user }: Context) =>
  count(server.database!.db.selectFrom('notification_rules').select((eb) => eb.fn.countAll().as('count')).where('user_id', '=', user.userId));
const pushTargets = ({ server, user }: Context) =>
  count(server.database!.db.selectFrom('notification_targets').select((eb) => eb.fn.countAll().as('count')).where('user_id', '=', user.userId));
const savedCommands = ({ server, user }: Context) =>
  count(server.database!.db.selectFrom('saved_commands').select((eb) => eb.fn.countAll().as('count')).where('user_id', '=', user.userId));
/** Shares and pending shares of every device the user owns. */
async function sharesGranted({ server, user }: Context): Promise<number> {
  const db = server.database!.db;
  const owned = db.selectFrom('devices').select('id').where('owner_id', '=', user.userId);
  const shares = await count(db.selectFrom('device_shares').select((eb) => eb.fn.countAll().as('count')).where('device_id', 'in', owned));
  return shares + (await count(db.selectFrom('device_invitations').select((eb) => eb.fn.countAll().as('count')).where('device_id', 'in', owned)));
}

async function newDevice(user: Client): Promise<number> {
  const reply = await user.post('/api/devices', { name: 'Shared', uniqueId: uniqueId('caps-shared') });
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  return reply.body.id as number;
}

/** A claim token per request, each naming a device of its own. */
async function claimTokens(admin: Client): Promise<{ token: string; uniqueId: string }[]> {
  const tokens: { token: string; uniqueId: string }[] = [];
  for (let index = 0; index < PARALLEL; index += 1) {
    const reply = await admin.post('/api/devices/claim-tokens', { uniqueId: uniqueId('caps-claim'), modelCode: 'CAP-1' });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    tokens.push(reply.body);
  }
  return tokens;
}

const deviceCreates: Prepare = async ({ user }) => (index) => user.post('/api/devices', { name: `Tracker ${index}`, uniqueId: uniqueId('caps-device') });
const deviceCreatesWithToken: Prepare = async ({ admin, user }) => {
  const tokens = await claimTokens(admin);
  return (index) => user.post('/api/devices', { name: `Tracker ${index}`, uniqueId: tokens[index]!.uniqueId, deviceToken: tokens[index]!.token });
};
const claims: Prepare = async ({ admin, user }) => {
  const tokens = await claimTokens(admin);
  return (index) => user.post('/api/devices/claim', { token: tokens[index]!.token });
};
const circleCreates: Prepare = async ({ user }) => (index) => user.post('/api/geofences', { name: `Fence ${index}`, area: `CIRCLE (52.5 13.4, ${100 + index})` });
/** One device, shared with a new address by each request (pending shares: no account has them). */
const sharesOfOneDevice: Prepare = async ({ user }) => {
  const deviceId = await newDevice(user);
  return (index) => user.post(`/api/devices/${deviceId}/shares`, { email: `caps-${index}-${randomUUID()}@example.com`, permissions: { position: true } });
};
/** The requests share the owner's devices in turn, with accounts and with new addresses: the plan counts over all of them. */
const sharesOfManyDevices: Prepare = async ({ server, user }) => {
  const deviceIds: number[] = [];
  for (let index = 0; index < PLAN_LIMIT; index += 1) deviceIds.push(await newDevice(user));
  const emails: string[] = [];
  for (let index = 0; index < PARALLEL; index += 1) {
    const email = `caps-friend-${index}-${randomUUID()}@example.com`;
    if (index % 2 === 0) await signIn(server, email);
    emails.push(email);
  }
  return (index) => user.post(`/api/devices/${deviceIds[index % deviceIds.length]}/shares`, { email: emails[index], permissions: { position: true } });
};
const ruleCreates: Prepare = async ({ user }) => (index) => user.post('/api/notifications', { type: 'alarm', always: true, channels: ['web'], attributes: { alarms: `sos${index}` } });

/** The saved commands a user may hold (MAX_SAVED_PER_USER in the commands service). */
const SAVED_COMMANDS_CAP = 1000;
/** The user two short of the cap: the rows before are stored directly, as a thousand requests would only slow the test. */
const savedCommandCreates: Prepare = async ({ server, user }) => {
  const rows = Array.from({ length: SAVED_COMMANDS_CAP - SERVER_CAP }, (_, index) => ({
    user_id: user.userId,
    by_administrator: 0,
    description: `Saved ${index}`,
    type: 'custom',
    attributes: JSON.stringify({ data: 'x' }),
    created_at: Date.now(),
  }));
  for (let start = 0; start < rows.length; start += 200) await server.database!.db.insertInto('saved_commands').values(rows.slice(start, start + 200)).execute();
  return (index) => user.post('/api/commands', { description: `Parallel ${index}`, type: 'custom', attributes: { data: 'ping' } });
};

const POLYGON_POINTS = 11;
const polygonCreates: Prepare = async ({ user }) => (index) => user.post('/api/geofences', { name: `Area ${index}`, area: polygon(POLYGON_POINTS) });
/** One circle (1 point) per request, each request turning its own into a 5-point polygon (+4 points). */
const polygonUpdates: Prepare = async ({ user }) => {
  const ids: number[] = [];
  for (let index = 0; index < PARALLEL; index += 1) {
    const reply = await user.post('/api/geofences', { name: `Circle ${index}`, area: 'CIRCLE (52.5 13.4, 100)' });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    ids.push(reply.body.id);
  }
  return (index) => user.put(`/api/geofences/${ids[index]}`, { area: polygon(5) });
};

const planRefusal = (limit: string) => ({ status: 402, code: 'PLAN_LIMIT_REACHED', limit });
const capRefusal = (limit: string) => ({ status: 409, code: 'LIMIT_REACHED', limit });

const CAPPED_CREATES: CappedCreate[] = [
  { name: 'plan devices: create', server: 'plan', prepare: deviceCreates, allowed: PLAN_LIMIT, refusal: planRefusal('devices'), stored: ownedDevices },
  { name: 'plan devices: create with a claim token', server: 'plan', prepare: deviceCreatesWithToken, allowed: PLAN_LIMIT, refusal: planRefusal('devices'), stored: ownedDevices },
  { name: 'plan devices: claim', server: 'plan', prepare: claims, allowed: PLAN_LIMIT, refusal: planRefusal('devices'), stored: ownedDevices },
  { name: 'plan geofences: create', server: 'plan', prepare: circleCreates, allowed: PLAN_LIMIT, refusal: planRefusal('geofences'), stored: ownedGeofences },
  { name: 'plan shares: create, over many devices', server: 'plan', prepare: sharesOfManyDevices, allowed: PLAN_LIMIT, refusal: planRefusal('shares'), stored: sharesGranted },
  { name: 'plan notification rules: create', server: 'plan', prepare: ruleCreates, allowed: PLAN_LIMIT, refusal: planRefusal('notificationRules'), stored: rules },
  { name: 'MAX_DEVICES_PER_USER: create', server: 'caps', prepare: deviceCreates, allowed: SERVER_CAP, refusal: capRefusal('devices'), stored: ownedDevices },
  { name: 'MAX_DEVICES_PER_USER: create with a claim token', server: 'caps', prepare: deviceCreatesWithToken, allowed: SERVER_CAP, refusal: capRefusal('devices'), stored: ownedDevices },
  { name: 'MAX_DEVICES_PER_USER: claim', server: 'caps', prepare: claims, allowed: SERVER_CAP, refusal: capRefusal('devices'), stored: ownedDevices },
  { name: 'MAX_GEOFENCES_PER_USER: create', server: 'caps', prepare: circleCreates, allowed: SERVER_CAP, refusal: capRefusal('geofences'), stored: ownedGeofences },
  { name: 'MAX_SHARES_PER_DEVICE: create', server: 'caps', prepare: sharesOfOneDevice, allowed: SERVER_CAP, refusal: capRefusal('sharesPerDevice'), stored: sharesGranted },
  { name: 'MAX_NOTIFICATION_RULES_PER_USER: create', server: 'caps', prepare: ruleCreates, allowed: SERVER_CAP, refusal: capRefusal('notificationRules'), stored: rules },
  {
    name: 'MAX_PUSH_TARGETS_PER_USER: register',
    server: 'caps',
    prepare: async ({ user }) => (index) => user.post('/api/notifications/targets', { kind: 'fcm', token: `caps-token-${index}-${randomUUID()}` }),
    allowed: SERVER_CAP,
    refusal: capRefusal('pushTargets'),
    stored: pushTargets,
  },
  {
    name: 'saved commands (1 000 a user): create',
    server: 'caps',
    prepare: savedCommandCreates,
    allowed: SERVER_CAP,
    refusal: { status: 409, code: 'SAVED_COMMANDS_LIMIT_REACHED' },
    stored: savedCommands,
  },
  {
    name: 'MAX_GEOFENCE_POINTS_PER_USER: create',
    server: 'points',
    prepare: polygonCreates,
    allowed: Math.floor(POINTS_CAP / POLYGON_POINTS),
    refusal: capRefusal('geofencePoints'),
    stored: async (context) => (await geofencePoints(context)) / POLYGON_POINTS,
  },
  {
    name: 'MAX_GEOFENCE_POINTS_PER_USER: update',
    server: 'points',
    prepare: polygonUpdates,
    allowed: (POINTS_CAP - PARALLEL) / 4,
    refusal: capRefusal('geofencePoints'),
    stored: async (context) => ((await geofencePoints(context)) - PARALLEL) / 4,
  },
];

/** Exactly `allowed` succeeded, every other request was refused with the cap's error, and nothing 5xx. */
function assertCapHeld(replies: Reply[], allowed: number, refusal: CappedCreate['refusal']): void {
  const succeeded = replies.filter((reply) => reply.status >= 200 && reply.status < 300);
  const refused = replies.filter((reply) => reply.status >= 300);
  const unexpected = refused.filter(
    (reply) => reply.status !== refusal.status || reply.body.code !== refusal.code || (refusal.limit !== undefined && reply.body.details?.[0]?.limit !== refusal.limit),
  );
  assert.deepEqual(unexpected, [], 'every refusal names the cap');
  assert.equal(succeeded.length, allowed, `succeeded: ${succeeded.length} of ${replies.length}`);
}

describeEachEngine('caps hold under parallel creates', (engine) => {
  const servers = new Map<ServerKind, Promise<TestServer>>();
  const pushSender = new RecordingPushSender();

  /** The server of this kind, started on first use. */
  function serverOf(kind: ServerKind): Promise<TestServer> {
    let server = servers.get(kind);
    if (!server) {
      server = startTestServer(engine, { RATE_LIMITS: 'off', ...SERVER_ENV[kind]() }, { pushSenders: new Map([['fcm', pushSender]]) });
      servers.set(kind, server);
    }
    return server;
  }
  after(async () => {
    for (const server of servers.values()) await (await server).dispose();
  });

  for (const capped of CAPPED_CREATES) {
    it(`${capped.name}: ${PARALLEL} at once, ${capped.allowed} stored`, async () => {
      const server = await serverOf(capped.server);
      const admin = new Client(server, await signIn(server, `caps-admin-${randomUUID()}@example.com`, { administrator: true }));
      const user = new Client(server, await signIn(server, `caps-user-${randomUUID()}@example.com`));
      const context = { server, admin, user };
      const send = await capped.prepare(context);
      const before = await capped.stored(context);
      const replies = await Promise.all(Array.from({ length: PARALLEL }, (_, index) => send(index)));
      assertCapHeld(replies, capped.allowed, capped.refusal);
      assert.equal((await capped.stored(context)) - before, capped.allowed, 'what the cap counts, read back');
    });
  }
});

/**
 * Two instances on one database (a SQLite file, or PostgreSQL): each holds its own connections, so
 * only the database can serialise their counts.
 */
describeEachEngine('caps hold under parallel creates on two instances', (engine) => {
  let shared: SharedTestDatabase;
  const instances: Server[] = [];

  before(async () => {
    shared = await createSharedDatabase(engine, 'trackstack-caps-');
    const env = {
      DATA_DIR: shared.dataDir,
      DATABASE_URL: shared.url,
      LOG_LEVEL: 'silent',
      INTERNAL_TOKEN: TEST_INTERNAL_TOKEN,
      RATE_LIMITS: 'off',
      PLANS_FILE: writeTestPlans(PLANS),
      ...NO_DEVICE_LISTENERS,
      ...NO_METRICS,
    };
    instances.push(await createServer(loadConfig(env)), await createServer(loadConfig(env)));
  });
  after(async () => {
    for (const instance of instances) await instance.close();
    await shared?.dispose();
  });

  describe('devices and geofences split across both', () => {
    for (const [name, url, body, table] of [
      ['devices', '/api/devices', () => ({ name: 'Tracker', uniqueId: uniqueId('caps-two') }), 'devices'],
      ['geofences', '/api/geofences', () => ({ name: 'Fence', area: 'CIRCLE (52.5 13.4, 100)' }), 'geofences'],
    ] as const) {
      it(`plan ${name}: ${PARALLEL} at once, half on each, ${PLAN_LIMIT} stored`, async () => {
        const login = await signIn(instances[0]!, `caps-two-${randomUUID()}@example.com`);
        const replies = await Promise.all(
          Array.from({ length: PARALLEL }, async (_, index) => {
            const response = await instances[index % 2]!.app.inject({ method: 'POST', url, headers: login.authorization, payload: body() });
            return { status: response.statusCode, body: response.json(), headers: response.headers } as Reply;
          }),
        );
        assertCapHeld(replies, PLAN_LIMIT, planRefusal(name));
        const stored = await instances[0]!.database!.db.selectFrom(table).select('id').where('owner_id', '=', login.userId).execute();
        assert.equal(stored.length, PLAN_LIMIT);
      });
    }
  });
});
