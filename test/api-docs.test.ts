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
});
