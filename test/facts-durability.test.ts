import assert from 'node:assert/strict';
import { it } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/platform/db/database.ts';
import { describeEachEngine } from './support/engines.ts';
import { eventually } from './support/eventually.ts';
import { createAccountAndSignIn, killableProcesses } from './support/killable-processes.ts';
import { callProcess } from './support/processes.ts';

const LEAVING = { email: 'leaving-killed@example.com', password: 'Leaving-Password-1' };
const DEVICES = 300;

describeEachEngine('a fact outlives the process that committed it', (engine) => {
  const processes = killableProcesses(engine, 'trackstack-facts-');

  async function ownedDevices(userId: number): Promise<number> {
    const database = openDatabase(loadConfig(processes.env).database);
    try {
      const rows = await database.db.selectFrom('devices').select('id').where('owner_id', '=', userId).execute();
      return rows.length;
    } finally {
      await database.close();
    }
  }

  it('an account deleted just before SIGKILL loses its devices after the restart', async () => {
    const running = await processes.start();
    const { accessToken, userId } = await createAccountAndSignIn(processes.env, running.url, LEAVING);
    for (let batch = 0; batch < DEVICES; batch += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, index) => {
          const made = await callProcess(running.url, 'POST', '/api/devices/', accessToken, { name: 'Killed', uniqueId: `killed-${batch + index}` });
          assert.equal(made.status, 201, JSON.stringify(made.body));
        }),
      );
    }

    assert.equal((await callProcess(running.url, 'DELETE', '/api/auth/account', accessToken)).status, 204);
    await processes.kill();
    const left = await ownedDevices(userId);
    assert.ok(left > 0, `the process died before its handler had removed every device (${left} of ${DEVICES} left)`);

    await processes.start();
    await eventually(async () => (await ownedDevices(userId)) === 0, 'the restarted process removed the rest', 30_000);
  });
});
