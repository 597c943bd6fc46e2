import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { request } from 'undici';
import { teltonikaAvlPacket, teltonikaHandshake } from '../src/services/tracking/protocols/teltonika/simulator.ts';
import { describeEachEngine } from './support/engines.ts';
import type { TestDatabase } from './support/engines.ts';
import { startProcess } from './support/processes.ts';
import type { RunningProcess } from './support/processes.ts';
import { NO_DEVICE_LISTENERS } from './support/server.ts';
import { freePort } from './support/ports.ts';

const ADMIN = { email: 'durability-admin@example.com', password: 'Durability-Password-1' };
const DEVICES = 40;
const T0 = Date.parse('2025-04-01T00:00:00.000Z');

async function api(base: string, method: 'GET' | 'POST', url: string, token?: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const response = await request(`${base}${url}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.statusCode, json: await response.body.json() };
}

/**
 * One tracker as fast as its acknowledgements allow: one record per packet, the next sent when the
 * previous is acknowledged. Counts the records acknowledged; stops when the connection goes.
 */
async function runTracker(port: number, imei: string, acknowledged: Map<string, number>): Promise<void> {
  const socket = net.connect({ port, host: '127.0.0.1' });
  socket.on('error', () => undefined);
  let received = Buffer.alloc(0);
  let wake: (() => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    wake?.();
  });
  socket.on('close', () => wake?.());
  const next = async (length: number): Promise<Buffer | undefined> => {
    while (received.length < length) {
      if (socket.destroyed) return undefined;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
    const answer = received.subarray(0, length);
    received = received.subarray(length);
    return answer;
  };
  socket.write(teltonikaHandshake(imei));
  if ((await next(1))?.[0] !== 1) return;
  for (let index = 0; ; index++) {
    const fix = { time: new Date(T0 + index * 1000), latitude: 48, longitude: 2 + index / 1e5, altitude: 0, speed: 5, course: 0, valid: true };
    socket.write(teltonikaAvlPacket([fix]));
    const ack = await next(4);
    if (!ack) return;
    acknowledged.set(imei, (acknowledged.get(imei) ?? 0) + ack.readUInt32BE(0));
  }
}

describeEachEngine('nothing acknowledged is lost when the server is killed mid-write', (engine) => {
  let dataDir: string;
  let database: TestDatabase | undefined;
  let env: Record<string, string>;
  let running: RunningProcess | undefined;

  before(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-durability-'));
    let databaseUrl = `sqlite:${path.join(dataDir, 'trackstack.db')}`;
    if (engine.name === 'postgres') {
      database = await engine.createDatabase();
      databaseUrl = database.url;
      // The child process opens its own connections; this one would only hold the database open.
      await database.database.close();
    }
    env = {
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      RATE_LIMITS: 'off',
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      ...NO_DEVICE_LISTENERS,
      TELTONIKA_PORT: String(await freePort()),
    };
  });
  after(async () => {
    await running?.stop();
    if (database) await database.dispose().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('every acknowledged record is stored after SIGKILL and a restart', async () => {
    running = await startProcess(env);
    const login = await api(running.url, 'POST', '/api/auth/login', undefined, ADMIN);
    const token = (login.json as { accessToken: string }).accessToken;
    const imeis = Array.from({ length: DEVICES }, (_, index) => String(356_307_042_450_000 + index));
    const deviceIds = new Map<string, number>();
    for (const imei of imeis) {
      const created = await api(running.url, 'POST', '/api/devices/', token, { name: imei, uniqueId: imei });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      deviceIds.set(imei, (created.json as { id: number }).id);
    }

    const acknowledged = new Map<string, number>();
    const trackers = imeis.map((imei) => runTracker(Number(env.TELTONIKA_PORT), imei, acknowledged));
    // Kill once writes are flowing, whatever batch is in flight at that instant.
    const start = Date.now();
    while ([...acknowledged.values()].reduce((sum, count) => sum + count, 0) < 2000 && Date.now() - start < 10_000) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    running.child.kill('SIGKILL');
    await running.stop();
    await Promise.all(trackers);
    const total = [...acknowledged.values()].reduce((sum, count) => sum + count, 0);
    assert.ok(total >= 2000, `writes were flowing (${total} acknowledged)`);

    running = await startProcess(env);
    const relogin = await api(running.url, 'POST', '/api/auth/login', undefined, ADMIN);
    const adminToken = (relogin.json as { accessToken: string }).accessToken;
    const range = `from=${new Date(T0).toISOString()}&to=${new Date(T0 + 86_400_000).toISOString()}`;
    let stored = 0;
    for (const imei of imeis) {
      const history = await api(running.url, 'GET', `/api/positions/?deviceId=${deviceIds.get(imei)}&${range}`, adminToken);
      assert.equal(history.status, 200);
      const count = (history.json as unknown[]).length;
      stored += count;
      assert.ok(count >= (acknowledged.get(imei) ?? 0), `${imei}: ${count} stored, ${acknowledged.get(imei)} acknowledged`);
    }
    // Stored but not acknowledged: at most the batch in flight when the process died.
    assert.ok(stored - total <= DEVICES, `${stored} stored, ${total} acknowledged`);
  });
});
