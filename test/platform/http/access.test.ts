import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enforceRouteAccess, installRouteAccess } from '../../../src/platform/http/access.ts';
import type { RouteAccessTable } from '../../../src/platform/http/access.ts';
import { createHttpApp } from '../../../src/platform/http/app.ts';
import type { HttpApp } from '../../../src/platform/http/app.ts';
import { IDENTITY_HEADERS, installIdentity } from '../../../src/platform/http/identity.ts';

const INTERNAL_TOKEN = 'access-test-internal-token-0123456789';
const ADMINISTRATOR_ID = 7;

const newApp = () => createHttpApp({ logLevel: 'silent', bodyLimit: 1024, trustProxy: undefined });
const ok = async () => ({ ok: true });

describe('route access: tables cannot drift from the routes', () => {
  it('refuses to start with a route that declares no access', async () => {
    const app = newApp();
    installRouteAccess(app, [{ 'GET /declared': 'user' }]);
    app.get('/declared', ok);
    app.get('/forgotten', ok);
    await assert.rejects(async () => app.ready(), /routes without a declared access.*GET \/forgotten/);
  });

  it('refuses to start with a table entry no route answers', async () => {
    const app = newApp();
    installRouteAccess(app, [{ 'GET /declared': 'user', 'DELETE /declared': 'admin' }]);
    app.get('/declared', ok);
    await assert.rejects(async () => app.ready(), /route table entries no route answers: DELETE \/declared/);
  });

  it('refuses a route that declares its access, or its OpenAPI security, a second time', () => {
    const app = newApp();
    installRouteAccess(app, [{ 'GET /twice': 'user' }]);
    assert.throws(() => app.get('/twice', { config: { access: 'public' } }, ok), /declared in its route table and in its config/);
    assert.throws(() => app.get('/secured', { config: { access: 'public' }, schema: { security: [] } }, ok), /OpenAPI security follows from the route's access/);
  });

  it('refuses two tables declaring one route', () => {
    const tables: RouteAccessTable[] = [{ 'GET /shared': 'user' }, { 'GET /shared': 'public' }];
    assert.throws(() => installRouteAccess(newApp(), tables), /GET \/shared is declared by two route tables/);
  });
});

describe('route access: enforced where the route is served', () => {
  let app: HttpApp;
  const asked: number[] = [];

  before(async () => {
    app = newApp();
    installRouteAccess(app, [{ 'GET /public': 'public', 'GET /user': 'user', 'GET /admin': 'admin', 'GET /service': 'service' }]);
    installIdentity(app, INTERNAL_TOKEN);
    enforceRouteAccess(app, async (userId) => {
      asked.push(userId);
      return userId === ADMINISTRATOR_ID;
    });
    for (const url of ['/public', '/user', '/admin', '/service']) app.get(url, ok);
    await app.ready();
  });
  after(() => app.close());

  const call = (url: string, caller: 'nobody' | 'service' | number, method: 'GET' | 'HEAD' = 'GET') => {
    const headers: Record<string, string> = {};
    if (caller !== 'nobody') headers[IDENTITY_HEADERS.internalToken] = INTERNAL_TOKEN;
    if (typeof caller === 'number') headers[IDENTITY_HEADERS.userId] = String(caller);
    return app.inject({ method, url, headers });
  };

  it('answers each caller as the route declares', async () => {
    const expected: [string, 'nobody' | 'service' | number, number][] = [
      ['/public', 'nobody', 200],
      ['/user', 'nobody', 401],
      ['/user', 1, 200],
      ['/user', 'service', 200],
      ['/admin', 'nobody', 401],
      ['/admin', 1, 403],
      ['/admin', ADMINISTRATOR_ID, 200],
      ['/admin', 'service', 200],
      ['/service', 'nobody', 403],
      ['/service', 1, 403],
      ['/service', 'service', 200],
    ];
    for (const [url, caller, status] of expected) {
      for (const method of ['GET', 'HEAD'] as const) {
        assert.equal((await call(url, caller, method)).statusCode, status, `${method} ${url} by ${caller}`);
      }
    }
    // Only administrator routes ask who is one.
    assert.deepEqual([...new Set(asked)].sort(), [1, ADMINISTRATOR_ID]);
  });
});
