import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import type { Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import type { Access } from '../../src/platform/http/access.ts';
import { MODULE_ROUTE_ACCESS } from '../../src/modules.ts';
import { createServer } from '../../src/server.ts';
import type { Server } from '../../src/server.ts';
import { AccessTokenIssuer } from '../../src/services/auth/tokens/access-tokens.ts';
import { describeEachEngine } from '../support/engines.ts';
import { TEST_INTERNAL_TOKEN, gatewayOnlyEnv, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

interface DocumentedRoute {
  method: string;
  /** The path with every parameter filled in. */
  url: string;
  /** What its OpenAPI security says a caller needs. */
  needs: 'nothing' | 'a token' | 'the internal token';
}

const HEALTH_AND_KEYS = ['/api/auth/health', '/api/devices/health', '/api/tracking/health', '/health', '/api/auth/.well-known/jwks.json'];

async function documentedRoutes(server: TestServer): Promise<DocumentedRoute[]> {
  const document = (await server.app.inject({ url: '/openapi.json' })).json() as {
    paths: Record<string, Record<string, { security?: Record<string, string[]>[] }>>;
  };
  const routes: DocumentedRoute[] = [];
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const schemes = JSON.stringify((operation.security ?? []).map((requirement) => Object.keys(requirement)).flat().sort());
      const needs = ({ '[]': 'nothing', '["bearer","cookie"]': 'a token', '["internalToken"]': 'the internal token' } as const)[schemes];
      assert.ok(needs, `${method} ${path} documents security ${schemes}`);
      routes.push({ method: method.toUpperCase(), url: path.replace(/\{[^}]+\}/g, '1'), needs });
    }
  }
  return routes;
}

/** Every route a module declares with this access, its parameters filled in. */
function declaredRoutes(access: Access): { method: string; url: string }[] {
  return Object.values(MODULE_ROUTE_ACCESS)
    .flatMap((table) => Object.entries(table))
    .filter(([, declared]) => declared === access)
    .map(([route]) => {
      const [method, url] = route.split(' ') as [string, string];
      return { method, url: url.replace(/:[^/]+/g, '1') };
    });
}

/**
 * The services behind a gateway-only process, stood in for by one server that publishes a signing
 * key (the gateway verifies tokens with it) and answers every other request with a mark, so a test
 * sees which requests the gateway let through.
 */
async function startStubServices(): Promise<{ url: string; reached: string[]; issuer: AccessTokenIssuer; close(): Promise<void> }> {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const reached: string[] = [];
  const server: HttpServer = createHttpServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    // The gateway's own start-up calls carry the internal token; a client's never do.
    const fromGateway = request.headers['x-internal-token'] === TEST_INTERNAL_TOKEN && !request.headers['x-user-id'];
    let body: unknown = { upstream: true };
    if (fromGateway && path === '/api/auth/.well-known/jwks.json') body = { keys: [publicKey.export({ format: 'jwk' })] };
    else if (fromGateway && path === '/api/auth/internal/revoked-sessions') body = { sessions: [] };
    else reached.push(`${request.method} ${path}`);
    request.resume();
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    reached,
    issuer: new AccessTokenIssuer(privateKey, 'http://localhost:8080', 600),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describeEachEngine('route access: one declaration for the gateway, the services and the API docs', (engine) => {
  let server: TestServer;
  let documented: DocumentedRoute[];
  let stub: Awaited<ReturnType<typeof startStubServices>>;
  let gateway: Server;

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off' });
    documented = await documentedRoutes(server);
    stub = await startStubServices();
    gateway = await createServer(
      loadConfig(gatewayOnlyEnv(stub.url, server.dataDir, { PUBLIC_URL: 'http://localhost:8080' })),
    );
  });
  after(async () => {
    await gateway.close();
    await stub.close();
    await server.dispose();
  });

  it('a gateway-only process enforces exactly what the API docs say of every route', async () => {
    assert.ok(documented.length > 50, 'every route is documented');
    for (const route of documented) {
      stub.reached.length = 0;
      const response = await gateway.app.inject({ method: route.method as 'GET', url: route.url });
      const label = `${route.method} ${route.url} (needs ${route.needs})`;
      if (route.needs === 'nothing') {
        assert.deepEqual(response.json(), { upstream: true }, label);
        assert.deepEqual(stub.reached, [`${route.method} ${route.url}`], label);
      } else {
        assert.equal(response.statusCode, route.needs === 'a token' ? 401 : 404, label);
        assert.equal(response.json().code, route.needs === 'a token' ? 'UNAUTHORIZED' : 'NOT_FOUND', label);
        assert.deepEqual(stub.reached, [], label);
      }
    }
  });

  it('the all-in-one process answers 401 without a token on every route the API docs protect', async () => {
    for (const route of documented.filter((documentedRoute) => documentedRoute.needs === 'a token')) {
      const response = await server.app.inject({ method: route.method as 'GET', url: route.url });
      assert.equal(response.statusCode, 401, `${route.method} ${route.url}`);
      assert.equal(response.json().code, 'UNAUTHORIZED', `${route.method} ${route.url}`);
    }
  });

  it('documents the health routes and the JWKS as public, and serves them without a token', async () => {
    for (const url of HEALTH_AND_KEYS) {
      assert.equal(documented.find((route) => route.method === 'GET' && route.url === url)?.needs, 'nothing', url);
      assert.equal((await server.app.inject({ url })).statusCode, 200, url);
    }
  });

  it('answers 404 JSON to an unknown route, with or without a token, and the services never see it', async () => {
    const login = await server.login({ email: 'route-access-unknown@example.com' });
    const gatewayToken = `Bearer ${await stub.issuer.issue({ userId: 1, email: 'a@example.com', sessionId: 's1' })}`;
    const unknown = [
      { method: 'POST', url: '/api/auth/no-such-operation' },
      { method: 'PATCH', url: '/api/devices/1' },
      { method: 'GET', url: '/api/nothing-here' },
    ] as const;
    for (const { method, url } of unknown) {
      for (const authorization of [undefined, login.authorization.authorization, 'Bearer junk']) {
        const response = await server.app.inject({ method, url, headers: authorization ? { authorization } : {} });
        assert.equal(response.statusCode, 404, `${method} ${url} ${authorization ?? 'without a token'}`);
        assert.equal(response.json().code, 'NOT_FOUND');
      }
      stub.reached.length = 0;
      for (const authorization of [undefined, gatewayToken, 'Bearer junk']) {
        const response = await gateway.app.inject({ method, url, headers: authorization ? { authorization } : {} });
        assert.equal(response.statusCode, 404, `gateway-only: ${method} ${url} ${authorization ?? 'without a token'}`);
        assert.equal(response.json().code, 'NOT_FOUND');
      }
      assert.deepEqual(stub.reached, []);
    }
  });

  it('lets administrators alone through administrator routes, and stops a demoted one at once', async () => {
    const user = await server.login({ email: 'route-access-user@example.com' });
    const admin = await server.login({ email: 'route-access-admin@example.com', administrator: true });
    const demoted = await server.login({ email: 'route-access-demoted@example.com', administrator: true });
    const routes = declaredRoutes('admin');
    assert.ok(routes.length >= 9);
    for (const { method, url } of routes) {
      const refused = await server.app.inject({ method: method as 'GET', url, headers: user.authorization, payload: method === 'GET' ? undefined : {} });
      assert.equal(refused.statusCode, 403, `${method} ${url}`);
      assert.equal(refused.json().code, 'FORBIDDEN');
      const admitted = await server.app.inject({ method: method as 'GET', url, headers: admin.authorization, payload: method === 'GET' ? undefined : {} });
      assert.ok(![401, 403].includes(admitted.statusCode), `${method} ${url} answered ${admitted.statusCode} to an administrator`);
    }

    const before = await server.app.inject({ url: '/api/auth/users', headers: demoted.authorization });
    assert.equal(before.statusCode, 200);
    const demotion = await server.app.inject({ method: 'PUT', url: `/api/auth/users/${demoted.userId}`, headers: admin.authorization, payload: { administrator: false } });
    assert.equal(demotion.json().administrator, false);
    const afterDemotion = await server.app.inject({ url: '/api/auth/users', headers: demoted.authorization });
    assert.equal(afterDemotion.statusCode, 403);
  });
});
