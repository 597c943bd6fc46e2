// PostgreSQL text cannot hold U+0000: before the validator refused it, such a field reached the database and
// answered 500 there (SQLite stored it).
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestLogin, TestServer } from '../../support/server.ts';

describeEachEngine('HTTP platform: NUL characters on the real server', (engine) => {
  let server: TestServer;
  let user: TestLogin;
  let admin: TestLogin;

  before(async () => {
    server = await startTestServer(engine);
    user = await server.login({ email: 'nul-user@example.com' });
    admin = await server.login({ email: 'nul-admin@example.com', administrator: true });
  });
  after(() => server.dispose());

  async function rowCount(table: string): Promise<number> {
    const database = server.database;
    assert.ok(database);
    const { rows } = await sql<{ count: number | string }>`select count(*) as count from ${sql.table(table)}`.execute(database.db);
    return Number(rows[0]?.count);
  }

  it('refuses a NUL in a device, geofence or profile field and in a search with 400 VALIDATION_FAILED, storing nothing', async () => {
    const requests: [TestLogin, 'POST' | 'PUT' | 'GET', string, object | undefined, string][] = [
      [user, 'POST', '/api/devices', { name: 'Tracker\u0000', uniqueId: 'nul-1' }, '/body/name'],
      [user, 'POST', '/api/geofences', { name: 'Depot', description: 'gate\u0000', area: 'CIRCLE (52.5 13.4, 100)' }, '/body/description'],
      [user, 'PUT', '/api/auth/profile', { name: 'Ada\u0000' }, '/body/name'],
      [admin, 'GET', '/api/auth/users?search=ada%00', undefined, '/query/search'],
    ];
    for (const [login, method, url, payload, path] of requests) {
      const response = await server.app.inject({ method, url, headers: login.authorization, ...(payload === undefined ? {} : { payload }) });
      assert.equal(response.statusCode, 400, `${method} ${url}: ${response.body}`);
      assert.equal(response.json().code, 'VALIDATION_FAILED');
      assert.equal(response.json().details[0].path, path);
    }
    assert.equal(await rowCount('devices'), 0);
    assert.equal(await rowCount('geofences'), 0);
    const profile = await server.app.inject({ url: '/api/auth/profile', headers: user.authorization });
    assert.equal(profile.json().name, null);
  });
});
