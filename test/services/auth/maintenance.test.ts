import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { signIn } from '../../support/api.ts';
import { createUser, PASSWORD, postJson } from './support/auth.ts';

describeEachEngine('auth housekeeping', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off', ACCESS_TOKEN_TTL: '60', REFRESH_TOKEN_TTL: '3600' });
  });
  after(() => server.dispose());

  const db = () => server.database!.db;

  it('answers its health check', async () => {
    const response = await server.app.inject({ url: '/api/auth/health' });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { status: 'healthy', service: 'auth', ready: true, database: 'connected' });
  });

  it('forgets sessions once none of their tokens can be valid, keeping live ones and recent revocations', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    const id = await createUser(server, { email: 'purge@example.com' });
    const revoked = await signIn(server, 'purge@example.com', { password: PASSWORD });
    const expired = await signIn(server, 'purge@example.com', { password: PASSWORD });
    await server.app.inject({ method: 'DELETE', url: '/api/auth/logout', headers: revoked.authorization });
    t.mock.timers.tick(30_000);
    await server.auth!.api.sessions.purgeEnded();
    assert.equal((await db().selectFrom('sessions').select('id').where('user_id', '=', id).execute()).length, 2, 'a revocation younger than the access TTL stays');

    t.mock.timers.tick(3_700_000);
    const live = await signIn(server, 'purge@example.com', { password: PASSWORD });
    await server.auth!.api.sessions.purgeEnded();
    const left = await db().selectFrom('sessions').select('id').where('user_id', '=', id).execute();
    assert.equal(left.length, 1);
    const refreshLeft = await db().selectFrom('refresh_tokens').select('session_id').where('user_id', '=', id).execute();
    assert.deepEqual(refreshLeft.map((row: { session_id: string }) => row.session_id), [left[0]?.id]);
    assert.equal((await postJson(server, '/api/auth/refresh', { refreshToken: live.refreshToken })).statusCode, 200);
    assert.equal((await postJson(server, '/api/auth/refresh', { refreshToken: expired.refreshToken })).statusCode, 401);
  });
});
