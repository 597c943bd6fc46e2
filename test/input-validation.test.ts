import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from './support/engines.ts';
import { startTestServer } from './support/server.ts';
import type { TestLogin, TestServer } from './support/server.ts';
import { nestedJson } from './support/nested-json.ts';

/** Spellings that JavaScript (and Ajv's coercion) would read as the number 2, and other non-canonical ids. */
const NON_CANONICAL_IDS = ['0x2', '0b10', '2e0', '2.0', '%202', '02', '+2', '0', '-1', '1e309', '9007199254740992'];

describeEachEngine('input validation across modules', (engine) => {
  let server: TestServer;
  let admin: TestLogin;

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off' });
    admin = await server.login({ email: 'input-admin@example.com', administrator: true });
  });
  after(() => server.dispose());

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: string) =>
    server.app.inject({
      method,
      url,
      headers: { ...admin.authorization, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(payload === undefined ? {} : { payload }),
    });

  /** `{}` stands for the id under test; every route answers the canonical id with something other than 400. */
  const ROUTES: ['GET' | 'DELETE', string][] = [
    ['GET', '/api/devices/{}'],
    ['DELETE', '/api/devices/{}/shares/1'],
    ['DELETE', '/api/devices/1/shares/{}'],
    ['GET', '/api/devices?id={}'],
    ['GET', '/api/devices?userId={}'],
    ['GET', '/api/geofences/{}'],
    ['GET', '/api/geofences?userId={}'],
    ['GET', '/api/events/{}'],
    ['GET', '/api/events?deviceId={}'],
    ['GET', '/api/positions?deviceId={}'],
    ['GET', '/api/positions?id={}'],
    ['GET', '/api/subscriptions/{}'],
    ['GET', '/api/subscriptions/check/{}'],
    ['GET', '/api/auth/users/{}'],
  ];

  it('answers ids in any but canonical decimal form with 400 VALIDATION_FAILED, on every module', async () => {
    for (const [method, route] of ROUTES) {
      const canonical = await call(method, route.replace('{}', String(admin.userId)));
      assert.notEqual(canonical.statusCode, 400, `${route}: ${canonical.body}`);
      for (const id of NON_CANONICAL_IDS) {
        const response = await call(method, route.replace('{}', id));
        assert.equal(response.statusCode, 400, `${method} ${route} with ${id}: ${response.body}`);
        assert.equal(response.json().code, 'VALIDATION_FAILED', `${route} with ${id}`);
      }
    }
  });

  it('bounds limit, offset and page: 1e309 and friends answer 400, never 500', async () => {
    for (const query of ['offset=1e309', 'offset=-1', 'offset=1.5', 'limit=0x10', 'limit=1001', 'limit=1e2']) {
      const response = await call('GET', `/api/devices/claim-tokens?${query}`);
      assert.equal(response.statusCode, 400, `${query}: ${response.body}`);
      assert.equal(response.json().code, 'VALIDATION_FAILED');
    }
    for (const query of ['page=1e309', 'limit=2.0', 'page=0']) {
      assert.equal((await call('GET', `/api/auth/users?${query}`)).statusCode, 400, query);
    }
    assert.equal((await call('GET', '/api/devices/claim-tokens?offset=0&limit=1000')).statusCode, 200);
  });

  it('answers a body nested 5 000 levels deep with 400 on every route that takes one, never 500', async () => {
    const document = (await server.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
    const deep = nestedJson(5000);
    let checked = 0;
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const method of Object.keys(operations)) {
        if (!['post', 'put', 'delete'].includes(method)) continue;
        const url = path.replace(/\{[^}]+\}/g, '1');
        const response = await call(method.toUpperCase() as 'POST' | 'PUT' | 'DELETE', url, deep);
        assert.ok(response.statusCode >= 400 && response.statusCode < 500, `${method} ${path}: ${response.statusCode} ${response.body}`);
        checked += 1;
      }
    }
    assert.ok(checked > 30, `only ${checked} routes checked`);
  });
});
