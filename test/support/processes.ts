import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { request } from 'undici';

export interface RunningProcess {
  child: ChildProcess;
  /** http://host:port of its listener. */
  url: string;
  output(): string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

const MAIN = path.resolve(import.meta.dirname, '../../src/main.ts');

/**
 * Starts `npm start`'s entry point (or another script that prints the same `API  <url>/api` line)
 * as a real process and waits until it has printed where it listens.
 */
export async function startProcess(env: Record<string, string>, options: { script?: string; timeoutMs?: number; nodeArgs?: readonly string[] } = {}): Promise<RunningProcess> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  // `nodeArgs` are Node's own options (`--cpu-prof`, for one): NODE_OPTIONS does not reach the child, whose env is set here.
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), options.script ?? MAIN], {
    env: { PATH: process.env.PATH, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Not left running when the caller gives up on it.
      child.kill('SIGKILL');
      reject(new Error(`process did not start:\n${output}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /API\s+(http:\/\/[^\s]+)\/api/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`process exited with ${code} before it started:\n${output}`));
    });
  });
  return {
    child,
    url,
    output: () => output,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** A JSON call to a running process, as a client makes it: the status and the parsed body. */
export async function callProcess(base: string, method: 'GET' | 'POST' | 'DELETE', url: string, token?: string, body?: unknown) {
  const response = await request(`${base}${url}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.body.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON bodies are asserted field by field
  return { status: response.statusCode, body: (text ? JSON.parse(text) : undefined) as any };
}
