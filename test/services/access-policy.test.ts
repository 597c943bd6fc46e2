import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../support/engines.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { signIn } from '../support/api.ts';
import { Client, uniqueId } from './devices/helpers.ts';

/**
 * Every rule of the access policy (docs/errors.md, Access) through every route of every module
 * that applies it: the same status and code wherever the rule is met.
 */
type Rule = 'no such device' | 'not reached' | 'owner only' | 'share lacks the flag' | 'readonly' | 'deviceReadonly' | 'limitCommands';

const EXPECTED: Record<Rule, [number, string]> = {
  'no such device': [404, 'NOT_FOUND'],
  'not reached': [403, 'FORBIDDEN'],
  'owner only': [403, 'FORBIDDEN'],
  'share lacks the flag': [403, 'PERMISSION_REQUIRED'],
  readonly: [403, 'USER_READONLY'],
  deviceReadonly: [403, 'USER_DEVICE_READONLY'],
  limitCommands: [403, 'COMMANDS_LIMITED'],
};

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
/** One route that applies a rule: its module, and the request on device `id`. */
interface RouteCase {
  module: string;
  method: Method;
  url: (id: number) => string;
  body?: (id: number) => unknown;
}

const RANGE = 'from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z';
/** Reports cover at most REPORT_MAX_DAYS. */
const REPORT_RANGE = 'from=2025-01-01T00:00:00Z&to=2025-02-01T00:00:00Z';
const ROUTES = {
  getDevice: { module: 'devices', method: 'GET', url: (id) => `/api/devices/${id}` },
  updateDevice: { module: 'devices', method: 'PUT', url: (id) => `/api/devices/${id}`, body: () => ({ name: 'Changed' }) },
  deleteDevice: { module: 'devices', method: 'DELETE', url: (id) => `/api/devices/${id}` },
  listShares: { module: 'devices', method: 'GET', url: (id) => `/api/devices/${id}/shares` },
  share: { module: 'devices', method: 'POST', url: (id) => `/api/devices/${id}/shares`, body: () => ({ email: 'someone@example.com', permissions: {} }) },
  createDevice: { module: 'devices', method: 'POST', url: () => '/api/devices', body: () => ({ name: 'New', uniqueId: uniqueId('policy') }) },
  claim: { module: 'devices', method: 'POST', url: () => '/api/devices/claim', body: () => ({ token: 'ABCD-EFGH-JKLM' }) },
  positions: { module: 'positions', method: 'GET', url: (id) => `/api/positions?deviceId=${id}` },
  history: { module: 'positions', method: 'GET', url: (id) => `/api/positions?deviceId=${id}&${RANGE}` },
  deletePositions: { module: 'positions', method: 'DELETE', url: (id) => `/api/positions?deviceId=${id}&${RANGE}` },
  events: { module: 'events', method: 'GET', url: (id) => `/api/events?deviceId=${id}` },
  tripsReport: { module: 'reports', method: 'GET', url: (id) => `/api/reports/trips?deviceId=${id}&${REPORT_RANGE}` },
  summaryReport: { module: 'reports', method: 'GET', url: (id) => `/api/reports/summary?deviceId=${id}&${REPORT_RANGE}&format=csv` },
  eventsReport: { module: 'reports', method: 'GET', url: (id) => `/api/reports/events?deviceId=${id}&${REPORT_RANGE}` },
  createGeofence: { module: 'geofences', method: 'POST', url: () => '/api/geofences', body: () => ({ name: 'Home', area: 'CIRCLE (52.5 13.4, 100)' }) },
  commandTypes: { module: 'commands', method: 'GET', url: (id) => `/api/commands/types?deviceId=${id}` },
  commandHistory: { module: 'commands', method: 'GET', url: (id) => `/api/commands/history?deviceId=${id}` },
  send: { module: 'commands', method: 'POST', url: () => '/api/commands/send', body: (id) => ({ deviceId: id, type: 'custom', attributes: { data: 'x' } }) },
  saveCommand: { module: 'commands', method: 'POST', url: () => '/api/commands', body: () => ({ description: 'Ping', type: 'custom', attributes: { data: 'x' } }) },
  notificationRule: { module: 'notifications', method: 'POST', url: () => '/api/notifications', body: (id) => ({ type: 'alarm', deviceIds: [id], channels: ['web'] }) },
} as const satisfies Record<string, RouteCase>;
type Route = keyof typeof ROUTES;

/** Which user meets the rule on which device, and the routes that apply it. */
const TABLE: Record<Rule, { caller: Caller; device: 'shared' | 'own' | 'missing'; routes: Route[] }> = {
  'no such device': {
    caller: 'owner',
    device: 'missing',
    routes: ['getDevice', 'updateDevice', 'deleteDevice', 'listShares', 'share', 'positions', 'history', 'deletePositions', 'events', 'tripsReport', 'summaryReport', 'eventsReport', 'commandTypes', 'commandHistory', 'send'],
  },
  'not reached': {
    caller: 'stranger',
    device: 'shared',
    routes: ['getDevice', 'updateDevice', 'deleteDevice', 'listShares', 'share', 'positions', 'history', 'deletePositions', 'events', 'tripsReport', 'summaryReport', 'eventsReport', 'commandTypes', 'commandHistory', 'send', 'notificationRule'],
  },
  'owner only': { caller: 'sharedAll', device: 'shared', routes: ['updateDevice', 'deleteDevice', 'listShares', 'share', 'deletePositions'] },
  'share lacks the flag': {
    caller: 'sharedNone',
    device: 'shared',
    routes: ['positions', 'history', 'events', 'tripsReport', 'summaryReport', 'eventsReport', 'commandTypes', 'commandHistory', 'send', 'notificationRule'],
  },
  readonly: { caller: 'readonly', device: 'own', routes: ['createDevice', 'claim', 'updateDevice', 'deleteDevice', 'share', 'deletePositions', 'createGeofence', 'send', 'saveCommand'] },
  deviceReadonly: { caller: 'deviceReadonly', device: 'own', routes: ['createDevice', 'claim', 'updateDevice', 'deleteDevice', 'share', 'deletePositions', 'send'] },
  limitCommands: { caller: 'limitCommands', device: 'own', routes: ['send', 'saveCommand'] },
};

type Caller = 'owner' | 'stranger' | 'sharedAll' | 'sharedNone' | 'readonly' | 'deviceReadonly' | 'limitCommands' | 'administrator';
const FLAGGED = ['readonly', 'deviceReadonly', 'limitCommands'] as const;
const ALL = { position: true, events: true, geofences: true, notifications: true, commands: true };

describeEachEngine('one access policy: every rule answers one code in every module', (engine) => {
  let server: TestServer;
  let clients: Record<Caller, Client>;
  let shared: number;
  const own = new Map<Caller, number>();

  before(async () => {
    server = await startTestServer(engine);
    const names: Caller[] = ['owner', 'stranger', 'sharedAll', 'sharedNone', ...FLAGGED, 'administrator'];
    clients = Object.fromEntries(
      await Promise.all(names.map(async (name) => [name, new Client(server, await signIn(server, `policy-${name}@example.com`, { administrator: name === 'administrator' }))])),
    ) as Record<Caller, Client>;
    const device = async (name: Caller) => {
      const created = await clients[name].post('/api/devices', { name: `${name}'s`, uniqueId: uniqueId('policy') });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body.id as number;
    };
    shared = await device('owner');
    for (const [name, permissions] of [['sharedAll', ALL], ['sharedNone', {}]] as const) {
      assert.equal((await clients.owner.post(`/api/devices/${shared}/shares`, { email: `policy-${name}@example.com`, permissions })).status, 201);
    }
    for (const name of FLAGGED) {
      own.set(name, await device(name));
      const flagged = await clients.administrator.put(`/api/auth/users/${clients[name].userId}`, { [name]: true });
      assert.equal(flagged.status, 200, JSON.stringify(flagged.body));
    }
  });
  after(() => server.dispose());

  /** What every refused request must have left alone. */
  async function state(): Promise<unknown> {
    const devices = await Promise.all((['owner', ...FLAGGED] as const).map(async (name) => (await clients[name].get('/api/devices')).body));
    const shares = (await clients.owner.get(`/api/devices/${shared}/shares`)).body;
    const commands = await Promise.all([shared, ...own.values()].map(async (id) => (await clients.administrator.get(`/api/commands/history?deviceId=${id}`)).body));
    const saved = await Promise.all(FLAGGED.map(async (name) => (await clients[name].get('/api/commands')).body));
    const geofences = (await clients.readonly.get('/api/geofences')).body;
    const rules = (await clients.stranger.get('/api/notifications')).body.concat((await clients.sharedNone.get('/api/notifications')).body);
    return { devices, shares, commands, saved, geofences, rules };
  }

  for (const [rule, { caller, device, routes }] of Object.entries(TABLE) as [Rule, (typeof TABLE)[Rule]][]) {
    it(`${rule}: ${EXPECTED[rule].join(' ')} on ${routes.length} routes of ${new Set(routes.map((route) => ROUTES[route].module)).size} modules, and changes nothing`, async () => {
      const before = await state();
      const id = device === 'missing' ? 987_654_321 : device === 'own' ? (own.get(caller) as number) : shared;
      const answers = await Promise.all(
        routes.map(async (name) => {
          const route: RouteCase = ROUTES[name];
          const reply = await clients[caller].request(route.method, route.url(id), route.body?.(id));
          return `${route.module} ${name}: ${reply.status} ${reply.body?.code}`;
        }),
      );
      assert.deepEqual(answers, routes.map((name) => `${ROUTES[name].module} ${name}: ${EXPECTED[rule].join(' ')}`));
      assert.deepEqual(await state(), before);
    });
  }

  it('a share without the flag names it in details', async () => {
    const reply = await clients.sharedNone.get(`/api/positions?deviceId=${shared}`);
    assert.deepEqual(reply.body.details, [{ path: '/permissions/position', message: 'the share does not include positions' }]);
  });

  it('the rules are met, not everything refused: the owner, a full share and an administrator pass', async () => {
    for (const caller of ['owner', 'sharedAll', 'administrator'] as const) {
      for (const name of ['positions', 'events', 'commandTypes', 'commandHistory'] as const) {
        const route: RouteCase = ROUTES[name];
        assert.equal((await clients[caller].request(route.method, route.url(shared))).status, 200, `${caller} ${name}`);
      }
    }
    assert.equal((await clients.administrator.put(`/api/devices/${own.get('readonly')}`, { name: 'Renamed by an administrator' })).status, 200);
  });
});
