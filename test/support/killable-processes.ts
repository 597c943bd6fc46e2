import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { runUserCommand } from '../../src/services/auth/cli.ts';
import { createSharedDatabase } from './engines.ts';
import type { SharedTestDatabase, TestEngine } from './engines.ts';
import { callProcess, startProcess } from './processes.ts';
import type { RunningProcess } from './processes.ts';
import { NO_DEVICE_LISTENERS } from './server.ts';

/** Server processes, one at a time, over one database that outlives each of them. */
export interface KillableProcesses {
  /** Their environment: the database's DATA_DIR and DATABASE_URL, no rate limits, no device ports, and the suite's settings. */
  readonly env: Record<string, string>;
  /** The process running now. */
  readonly running: RunningProcess;
  /** Starts the next process, with `extra` settings on top of `env`, once the last one is killed. */
  start(extra?: Record<string, string>): Promise<RunningProcess>;
  /** Ends the running process with SIGKILL, as a crash would: no shutdown work of its own runs. */
  kill(): Promise<void>;
}

/**
 * For tests that kill a process between a commit and its effect and look for the effect after a
 * restart. The database is made before the suite (with `settings()`, which may start what they
 * point at) and dropped after it, once the last process is stopped.
 */
export function killableProcesses(engine: TestEngine, folderPrefix: string, settings: () => Promise<Record<string, string>> | Record<string, string> = () => ({})): KillableProcesses {
  let shared: SharedTestDatabase;
  let env: Record<string, string> | undefined;
  let running: RunningProcess | undefined;
  before(async () => {
    shared = await createSharedDatabase(engine, folderPrefix);
    env = { DATA_DIR: shared.dataDir, DATABASE_URL: shared.url, RATE_LIMITS: 'off', ...NO_DEVICE_LISTENERS, ...(await settings()) };
  });
  after(async () => {
    await running?.stop();
    await shared.dispose();
  });
  const suiteEnv = () => {
    assert.ok(env, 'the suite has not started');
    return env;
  };
  const current = () => {
    assert.ok(running, 'no process is running');
    return running;
  };
  return {
    get env() {
      return suiteEnv();
    },
    get running() {
      return current();
    },
    async start(extra = {}) {
      assert.equal(running, undefined, 'one process at a time: kill the running one first');
      running = await startProcess({ ...suiteEnv(), ...extra });
      return running;
    },
    async kill() {
      const killed = current();
      running = undefined;
      killed.child.kill('SIGKILL');
      await killed.stop();
    },
  };
}

/** Creates an account with the CLI, as an operator would, and signs it in over HTTP. */
export async function createAccountAndSignIn(
  env: Record<string, string>,
  url: string,
  credentials: { email: string; password: string },
): Promise<{ accessToken: string; userId: number }> {
  const created = await runUserCommand(loadConfig(env), ['create', '--email', credentials.email, '--password', credentials.password]);
  assert.equal(created.exitCode, 0, created.output);
  const login = await callProcess(url, 'POST', '/api/auth/login', undefined, credentials);
  assert.equal(login.status, 200, JSON.stringify(login.body));
  const { accessToken, user } = login.body as { accessToken: string; user: { id: number } };
  return { accessToken, userId: user.id };
}
