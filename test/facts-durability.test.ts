import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/platform/db/database.ts';
import { runUserCommand } from '../src/services/auth/cli.ts';
import { createSharedDatabase, describeEachEngine } from './support/engines.ts';
import type { SharedTestDatabase } from './support/engines.ts';
import { eventually } from './support/eventually.ts';
import { callProcess, startProcess } from './support/processes.ts';
import type { RunningProcess } from './support/processes.ts';
import { NO_DEVICE_LISTENERS } from './support/server.ts';

const LEAVING = { email: 'leaving-killed@example.com', password: 'Leaving-Password-1' };
const DEVICES = 300;


describeEachEngine('a fact outlives the process that committed it', (engine) => {
  let shared: SharedTestDatabase;
  let env: Record<string, string>;
  let running: RunningProcess | undefined;

  before(async () => {
    shared = await createSharedDatabase(engine, 'trackstack-facts-');
    env = { DATA_DIR: shared.dataDir, DATABASE_URL: shared.url, RATE_LIMITS: 'off', ...NO_DEVICE_LISTENERS };
  });
  after(async () => {
    await running?.stop();
    await shared.dispose();
  });

  async function ownedDevices(userId: number): Promise<number> {
    const database = openDatabase(loadConfig(env).database);
    try {
      const rows = await database.db.selectFrom('devices').select('id').where('owner_id', '=', userId).execute();
      return rows.length;
    } finally {
      await database.close();
    }
  }

  it('an account deleted just before SIGKILL loses its devices after the restart', async () => {
    running = await startProcess(env);
    const created = await runUserCommand(loadConfig(env), ['create', '--email', LEAVING.email, '--password', LEAVING.password]);
    assert.equal(created.exitCode, 0, created.output);
    const login = await callProcess(running.url, 'POST', '/api/auth/login', undefined, LEAVING);
    assert.equal(login.status, 200, JSON.stringify(login.body));
    const { accessToken, user } = login.body as { accessToken: string; user: { id: number } };
    for (let batch = 0; batch < DEVICES; batch += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, index) => {
          const made = await callProcess(running!.url, 'POST', '/api/devices/', accessToken, { name: 'Killed', uniqueId: `killed-${batch + index}` });
          assert.equal(made.status, 201, JSON.stringify(made.body));
        }),
      );
    }

    assert.equal((await callProcess(running.url, 'DELETE', '/api/auth/account', accessToken)).status, 204);
    running.child.kill('SIGKILL');
    await running.stop();
    const left = await ownedDevices(user.id);
    assert.ok(left > 0, `the process died before its handler had removed every device (${left} of ${DEVICES} left)`);

    running = await startProcess(env);
    await eventually(async () => (await ownedDevices(user.id)) === 0, 'the restarted process removed the rest', 30_000);
  });
});
