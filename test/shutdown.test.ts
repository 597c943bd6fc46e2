import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { testEngines } from './support/engines.ts';
import type { TestDatabase } from './support/engines.ts';
import { startProcess } from './support/processes.ts';
import { NO_DEVICE_LISTENERS } from './support/server.ts';
import { TcpProxy } from './support/tcp-proxy.ts';

const postgres = testEngines().find((engine) => engine.name === 'postgres');

// The database is reached through a relay that can slow it down, so a request can be kept in flight.
describe('graceful shutdown on SIGTERM', { skip: postgres ? false : 'needs TEST_DATABASE_URL' }, () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-shutdown-'));
  let testDatabase: TestDatabase;
  let proxy: TcpProxy;

  before(async () => {
    testDatabase = await postgres!.createDatabase();
    const target = new URL(testDatabase.url);
    proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    await proxy.start();
  });
  after(async () => {
    await proxy.stop();
    await testDatabase.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('finishes in-flight requests, stops accepting, closes the database and exits 0', async () => {
    const proxied = new URL(testDatabase.url);
    proxied.port = String(proxy.port);
    const server = await startProcess({ DATA_DIR: dataDir, DATABASE_URL: proxied.toString(), ...NO_DEVICE_LISTENERS });

    proxy.delayMs = 800;
    const inFlight = request(`${server.url}/api/auth/health`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const exitCode = server.stop();

    const response = await inFlight;
    assert.equal(response.statusCode, 200);
    assert.equal(((await response.body.json()) as { status: string }).status, 'healthy');
    assert.equal(await exitCode, 0, server.output());
    await assert.rejects(request(`${server.url}/api/auth/health`), /ECONNREFUSED/);
    proxy.delayMs = 0;
  });
});
