import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from './support/ports.ts';
import { NO_DEVICE_LISTENERS, NO_METRICS } from './support/server.ts';

const MAIN = path.resolve(import.meta.dirname, '../src/main.ts');

/** Runs `npm start`'s entry point until it exits by itself: its exit code, stdout and stderr. */
function runMain(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MAIN], { env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

function holdTcp(port: number): Promise<net.Server> {
  const server = net.createServer();
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

function holdUdp(port: number): Promise<dgram.Socket> {
  const socket = dgram.createSocket('udp4');
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, '127.0.0.1', () => resolve(socket));
  });
}

describe('a listener port another process holds', () => {
  let dataDir: string;
  /** Every listener off or on a free port: each case then takes exactly one port away. */
  let env: Record<string, string>;
  before(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-taken-port-'));
    env = { DATA_DIR: dataDir, PORT: String(await freePort()), ...NO_DEVICE_LISTENERS, ...NO_METRICS };
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  /** Starts the process with `variable` on a port held as `hold` does, and expects it to stop with `line` alone. */
  async function expectStopped(variable: string, hold: (port: number) => Promise<{ close(): unknown }>, line: (port: number) => string) {
    const port = await freePort();
    const holder = await hold(port);
    try {
      const result = await runMain({ ...env, [variable]: String(port) });
      assert.equal(result.code, 1, result.stderr);
      assert.equal(result.stderr, `${line(port)}\n`, 'one line, no stack trace');
      assert.doesNotMatch(result.stdout, /\n\s+at /, 'no stack trace on stdout either');
    } finally {
      holder.close();
    }
  }

  it('the HTTP port (PORT)', async () => {
    await expectStopped('PORT', holdTcp, (port) => `Configuration error: PORT: port ${port} is already in use`);
  });

  it('a TCP device port (TELTONIKA_PORT)', async () => {
    await expectStopped('TELTONIKA_PORT', holdTcp, (port) => `Configuration error: TELTONIKA_PORT: port ${port} is already in use`);
  });

  it('the UDP half of a device port that listens on both (GPS103_PORT)', async () => {
    await expectStopped('GPS103_PORT', holdUdp, (port) => `Configuration error: GPS103_PORT: UDP port ${port} is already in use`);
  });

  it('the TCP half of a device port that listens on both (GPS103_PORT)', async () => {
    await expectStopped('GPS103_PORT', holdTcp, (port) => `Configuration error: GPS103_PORT: TCP port ${port} is already in use`);
  });

  it('the metrics port (METRICS_PORT)', async () => {
    await expectStopped('METRICS_PORT', holdTcp, (port) => `Configuration error: METRICS_PORT: port ${port} is already in use`);
  });
});
