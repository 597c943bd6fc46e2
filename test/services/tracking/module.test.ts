import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { TEST_INTERNAL_TOKEN, startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { assertError } from '../../support/api.ts';

describeEachEngine('tracking alone in a process (SERVICES=tracking)', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, { SERVICES: 'tracking' });
  });
  after(() => server.dispose());

  const asUser = { 'x-internal-token': TEST_INTERNAL_TOKEN, 'x-user-id': '1', 'x-user-email': 'someone@example.com' };

  it('answers health', async () => {
    const response = await server.app.inject({ url: '/api/tracking/health' });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { status: 'healthy', service: 'tracking', ready: true, database: 'connected' });
  });

  it('answers 502 where the devices or auth service is needed, until a remote one is wired', async () => {
    assertError(await server.app.inject({ url: '/api/positions/', headers: asUser }), 502, 'UPSTREAM_UNAVAILABLE');
    assertError(await server.app.inject({ url: '/api/events/', headers: asUser }), 502, 'UPSTREAM_UNAVAILABLE');
    assertError(await server.app.inject({ url: '/api/geofences/', headers: asUser }), 502, 'UPSTREAM_UNAVAILABLE');
    assertError(await server.app.inject({ method: 'POST', url: '/api/geofences/', headers: asUser, payload: { name: 'n', area: 'CIRCLE (1 2, 3)' } }), 502, 'UPSTREAM_UNAVAILABLE');
  });

  it('without the internal token a forged X-User-Id carries no identity', async () => {
    assertError(await server.app.inject({ url: '/api/positions/', headers: { 'x-user-id': '1' } }), 401, 'UNAUTHORIZED');
  });
});
