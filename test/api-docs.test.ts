import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from './support/engines.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

/** Every endpoint of the spec (§4), as OpenAPI writes its path. */
const SPEC_ENDPOINTS = [
  'post /api/auth/login', 'delete /api/auth/logout', 'get /api/auth/profile', 'delete /api/auth/account',
  'post /api/auth/register', 'post /api/auth/verify', 'post /api/auth/resend-verification',
  'post /api/auth/password/reset', 'post /api/auth/password/update', 'get /api/auth/openid/auth',
  'get /api/auth/openid/callback', 'post /api/auth/openid/callback', 'post /api/auth/openid/token',
  'post /api/auth/2fa/setup', 'post /api/auth/2fa/verify', 'post /api/auth/2fa/disable', 'post /api/auth/2fa/regenerate',
  'post /api/auth/2fa/login', 'post /api/auth/refresh', 'post /api/auth/verify-code', 'get /api/auth/validate',
  'get /api/auth/health',
  'get /api/devices', 'get /api/devices/{id}', 'post /api/devices', 'put /api/devices/{id}', 'delete /api/devices/{id}',
  'post /api/devices/validate-token', 'post /api/devices/claim', 'get /api/devices/health',
  'get /api/positions', 'delete /api/positions', 'get /api/events', 'get /api/events/{id}',
  'get /api/geofences', 'post /api/geofences', 'get /api/geofences/{id}', 'put /api/geofences/{id}', 'delete /api/geofences/{id}',
  'get /api/tracking/health',
  'get /api/subscriptions/{user_id}', 'get /api/subscriptions/check/{user_id}',
  'get /api/subscriptions/by-provider/{provider}/{subscription_id}',
  'post /webhooks/stripe', 'post /webhooks/apple', 'post /webhooks/google', 'get /health',
];

/**
 * Public routes that answer 401 themselves (a wrong password, a missing or spent token). Every other
 * route that can answer 401 is one the access check guards: those with a credential in their security.
 */
const PUBLIC_401: readonly { operation: string; request?: { method: 'GET' | 'POST'; url: string; payload?: Record<string, unknown> } }[] = [
  { operation: 'post /api/auth/login', request: { method: 'POST', url: '/api/auth/login', payload: { email: 'nobody@example.com', password: 'not the password' } } },
  { operation: 'post /api/auth/2fa/login', request: { method: 'POST', url: '/api/auth/2fa/login', payload: { temp_token: 'x'.repeat(43), code: '123456' } } },
  { operation: 'post /api/auth/2fa/email/resend', request: { method: 'POST', url: '/api/auth/2fa/email/resend', payload: { temp_token: 'x'.repeat(43) } } },
  { operation: 'post /api/auth/refresh', request: { method: 'POST', url: '/api/auth/refresh' } },
  { operation: 'get /api/auth/validate', request: { method: 'GET', url: '/api/auth/validate' } },
  // Its 401s need Google's keys served: test/services/auth/openid/token-exchange.test.ts provokes them.
  { operation: 'post /api/auth/openid/token' },
];

interface Operation {
  security?: Record<string, string[]>[];
  responses?: Record<string, unknown>;
}

describeEachEngine('API docs', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine);
  });
  after(() => server.dispose());

  it('serves OpenAPI 3 covering every endpoint of the spec, and the Swagger UI', async () => {
    const response = await server.app.inject({ url: '/openapi.json' });
    assert.equal(response.statusCode, 200);
    const document = response.json();
    assert.match(document.openapi, /^3\./);
    const documented = new Set<string>();
    for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(operations)) documented.add(`${method} ${path.replace(/\/$/, '')}`);
    }
    const missing = SPEC_ENDPOINTS.filter((endpoint) => !documented.has(endpoint));
    assert.deepEqual(missing, []);
    const ui = await server.app.inject({ url: '/docs/' });
    assert.equal(ui.statusCode, 200);
    assert.match(ui.headers['content-type'] as string, /text\/html/);
  });

  it('every operation that can answer 401 documents it: those that take a user\'s credential, and the public ones that answer it themselves', async () => {
    const document = (await server.app.inject({ url: '/openapi.json' })).json();
    const undocumented: string[] = [];
    const guarded: string[] = [];
    for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, Operation>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        const name = `${method} ${path.replace(/\/$/, '')}`;
        const takesCredential = (operation.security ?? []).some((scheme) => 'bearer' in scheme || 'cookie' in scheme);
        if (takesCredential) guarded.push(name);
        if ((takesCredential || PUBLIC_401.some((entry) => entry.operation === name)) && !Object.hasOwn(operation.responses ?? {}, '401')) undocumented.push(name);
      }
    }
    assert.ok(guarded.length > 40, `${guarded.length} operations take a credential`);
    assert.deepEqual(undocumented, []);
  });

  it('documents the report routes: their query, their rows as JSON, and the CSV and XLSX downloads', async () => {
    const document = (await server.app.inject({ url: '/openapi.json' })).json();
    interface ReportOperation {
      parameters: { name: string; in: string; required?: boolean }[];
      responses: Record<string, { content?: Record<string, { schema: { items?: { properties: Record<string, unknown> } } }> }>;
    }
    const fields: Record<string, string> = { trips: 'startOdometer', stops: 'engineHours', summary: 'averageSpeed', route: 'fixTime', events: 'eventTime', geofences: 'geofenceName' };
    for (const [kind, field] of Object.entries(fields)) {
      const operation = (document.paths as Record<string, Record<string, ReportOperation>>)[`/api/reports/${kind}`]?.get;
      assert.ok(operation, `GET /api/reports/${kind} is documented`);
      const query = operation.parameters.filter((parameter) => parameter.in === 'query').map((parameter) => [parameter.name, parameter.required ?? false]);
      assert.deepEqual(query.filter(([name]) => name !== 'daily'), [['deviceId', false], ['from', true], ['to', true], ['format', false]], kind);
      const content = operation.responses['200']?.content ?? {};
      assert.deepEqual(Object.keys(content), ['application/json', 'text/csv', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'], kind);
      assert.ok(Object.hasOwn(content['application/json']?.schema.items?.properties ?? {}, field), `${kind} rows carry ${field}`);
      for (const status of ['400', '401', '402', '403', '404']) assert.ok(Object.hasOwn(operation.responses, status), `${kind} documents ${status}`);
    }
  });

  it('the public operations listed as answering 401 do answer it without a credential', async () => {
    for (const { operation, request } of PUBLIC_401) {
      if (!request) continue;
      const response = await server.app.inject(request);
      assert.equal(response.statusCode, 401, `${operation}: ${response.body}`);
      assert.equal(response.json().error, 'Unauthorized');
    }
  });
});
