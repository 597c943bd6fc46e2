import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createServer } from '../../src/server.ts';
import type { Server } from '../../src/server.ts';
import { describeEachEngine, testEngines } from '../support/engines.ts';
import type { TestDatabase } from '../support/engines.ts';
import { NO_DEVICE_LISTENERS, NO_METRICS, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';

const HEALTH = [
  ['/api/auth/health', 'auth'],
  ['/api/devices/health', 'device'],
  ['/api/tracking/health', 'tracking'],
] as const;

describeEachEngine('health', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine);
  });
  after(() => server.dispose());

  it('answers the spec shapes for the four services', async () => {
    for (const [url, service] of HEALTH) {
      const response = await server.app.inject({ url });
      assert.equal(response.statusCode, 200, url);
      assert.deepEqual(response.json(), { status: 'healthy', service, ready: true, database: 'connected' });
    }
    const billing = await server.app.inject({ url: '/health' });
    assert.deepEqual(billing.json(), { status: 'ok', service: 'billing', database: 'connected' });
  });
});

const postgres = testEngines().find((engine) => engine.name === 'postgres');

describe('health while PostgreSQL is unreachable', { skip: postgres ? false : 'needs TEST_DATABASE_URL' }, () => {
  let testDatabase: TestDatabase;
  let proxy: TcpProxy;
  let server: Server;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-health-'));

  before(async () => {
    testDatabase = await postgres!.createDatabase();
    const target = new URL(testDatabase.url);
    proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    await proxy.start();
    const proxied = new URL(testDatabase.url);
    proxied.port = String(proxy.port);
    server = await createServer(loadConfig({ DATA_DIR: dataDir, DATABASE_URL: proxied.toString(), LOG_LEVEL: 'silent', ...NO_DEVICE_LISTENERS, ...NO_METRICS }));
  });
  after(async () => {
    await server.close();
    await proxy.stop();
    await testDatabase.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('reports degraded with 200, keeps serving, and recovers when the database returns', async () => {
    assert.equal((await server.app.inject({ url: '/api/auth/health' })).json().status, 'healthy');

    await proxy.stop();
    for (const [url, service] of HEALTH) {
      const response = await server.app.inject({ url });
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), { status: 'degraded', service, ready: false, database: 'disconnected' });
    }
    const billing = await server.app.inject({ url: '/health' });
    assert.deepEqual(billing.json(), { status: 'degraded', service: 'billing', database: 'disconnected' });
    const jwks = await server.app.inject({ url: '/api/auth/.well-known/jwks.json' });
    assert.equal(jwks.statusCode, 200, 'routes that need no database keep serving');

    await proxy.start();
    const recovered = await server.app.inject({ url: '/api/auth/health' });
    assert.deepEqual(recovered.json(), { status: 'healthy', service: 'auth', ready: true, database: 'connected' });
  });
});
