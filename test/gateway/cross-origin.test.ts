import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createServer } from '../../src/server.ts';
import type { Server } from '../../src/server.ts';
import { describeEachEngine } from '../support/engines.ts';
import { gatewayOnlyEnv, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

const PUBLIC_URL = 'https://api.example.com';
const WEB_ORIGIN = 'https://app.example.com';

function preflight(origin: string, method: string) {
  return {
    method: 'OPTIONS' as const,
    url: '/api/devices/',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' },
  };
}

describeEachEngine('a web app on its own origin (WEB_URL other than PUBLIC_URL)', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, { PUBLIC_URL, WEB_URL: `${WEB_ORIGIN}/` });
  });
  after(() => server.dispose());

  it('answers its preflight before authentication, allowing credentials, the methods and headers the API uses', async () => {
    const response = await server.app.inject(preflight(WEB_ORIGIN, 'DELETE'));
    assert.equal(response.statusCode, 204);
    assert.equal(response.headers['access-control-allow-origin'], WEB_ORIGIN);
    assert.equal(response.headers['access-control-allow-credentials'], 'true');
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
      assert.ok(String(response.headers['access-control-allow-methods']).split(', ').includes(method), method);
    }
    for (const header of ['authorization', 'content-type', 'x-request-id']) {
      assert.ok(String(response.headers['access-control-allow-headers']).split(', ').includes(header), header);
    }
    assert.match(String(response.headers.vary), /Origin/);
  });

  it('lets it read answers, the request id and Retry-After, with a bearer or with the cookie', async () => {
    const login = await server.login({ email: 'web-app@example.com' });
    const bearer = await server.app.inject({ url: '/api/devices/', headers: { origin: WEB_ORIGIN, ...login.authorization } });
    assert.equal(bearer.statusCode, 200);
    assert.equal(bearer.headers['access-control-allow-origin'], WEB_ORIGIN);
    assert.equal(bearer.headers['access-control-allow-credentials'], 'true');
    assert.deepEqual(String(bearer.headers['access-control-expose-headers']).split(', ').slice(0, 2), ['x-request-id', 'retry-after']);

    const created = await server.app.inject({
      method: 'POST',
      url: '/api/devices/',
      headers: { origin: WEB_ORIGIN, cookie: `access_token=${login.token}`, 'content-type': 'application/json' },
      payload: { name: 'From the web app', uniqueId: 'web-app-0001' },
    });
    assert.equal(created.statusCode, 201, created.body);
    const listed = await server.app.inject({ url: '/api/devices/', headers: login.authorization });
    assert.deepEqual(listed.json().map((device: { uniqueId: string }) => device.uniqueId), ['web-app-0001']);
  });

  it('keeps the CSRF guard: a cookie-authenticated form post from the web origin is still refused', async () => {
    const login = await server.login({ email: 'web-app-form@example.com' });
    const response = await server.app.inject({
      method: 'POST',
      url: '/api/devices/',
      headers: { origin: WEB_ORIGIN, cookie: `access_token=${login.token}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'name=Forged&uniqueId=web-app-forged',
    });
    assert.equal(response.statusCode, 403);
    assert.equal(response.json().code, 'FORBIDDEN');
    const listed = await server.app.inject({ url: '/api/devices/', headers: login.authorization });
    assert.deepEqual(listed.json(), [], 'nothing was created');
  });

  it('gives any other origin no CORS grant, so the browser keeps the answer from its page', async () => {
    const login = await server.login({ email: 'web-app-other@example.com' });
    const refusedPreflight = await server.app.inject(preflight('https://evil.example', 'POST'));
    assert.equal(refusedPreflight.headers['access-control-allow-origin'], undefined);
    const answer = await server.app.inject({ url: '/api/devices/', headers: { origin: 'https://evil.example', ...login.authorization } });
    assert.equal(answer.headers['access-control-allow-origin'], undefined);
    const lookalike = await server.app.inject({ url: '/api/devices/', headers: { origin: 'https://app.example.com.evil.example', ...login.authorization } });
    assert.equal(lookalike.headers['access-control-allow-origin'], undefined);
  });
});

describeEachEngine('one origin for the API and the web app (the default)', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, { PUBLIC_URL, WEB_URL: `${PUBLIC_URL}/app` });
  });
  after(() => server.dispose());

  it('adds no CORS headers, and a preflight finds no route', async () => {
    const login = await server.login({ email: 'same-origin@example.com' });
    const answer = await server.app.inject({ url: '/api/devices/', headers: { origin: PUBLIC_URL, ...login.authorization } });
    assert.equal(answer.statusCode, 200);
    assert.deepEqual(Object.keys(answer.headers).filter((name) => name.startsWith('access-control-')), []);
    const options = await server.app.inject(preflight(PUBLIC_URL, 'POST'));
    assert.equal(options.statusCode, 404);
    assert.equal(options.json().code, 'NOT_FOUND');
    assert.deepEqual(Object.keys(options.headers).filter((name) => name.startsWith('access-control-')), []);
  });
});

describeEachEngine('a gateway-only process for a web app on its own origin', (engine) => {
  let services: TestServer;
  let gateway: Server;
  before(async () => {
    services = await startTestServer(engine, { PUBLIC_URL, SERVICES: 'auth,devices,tracking,billing' });
    await services.app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(services.app.server.address() as AddressInfo).port}`;
    gateway = await createServer(
      loadConfig(gatewayOnlyEnv(url, services.dataDir, { PUBLIC_URL, WEB_URL: WEB_ORIGIN })),
    );
  });
  after(async () => {
    await gateway?.close();
    await services?.dispose();
  });

  it('answers the preflight itself and proxies the request with the grant', async () => {
    const answered = await gateway.app.inject(preflight(WEB_ORIGIN, 'POST'));
    assert.equal(answered.statusCode, 204);
    assert.equal(answered.headers['access-control-allow-origin'], WEB_ORIGIN);
    const login = await services.login({ email: 'web-app-split@example.com' });
    const listed = await gateway.app.inject({ url: '/api/devices/', headers: { origin: WEB_ORIGIN, ...login.authorization } });
    assert.equal(listed.statusCode, 200, listed.body);
    assert.equal(listed.headers['access-control-allow-origin'], WEB_ORIGIN);
  });
});
