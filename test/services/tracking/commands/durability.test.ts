import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { loadConfig } from '../../../../src/config.ts';
import { runUserCommand } from '../../../../src/services/auth/cli.ts';
import { createSharedDatabase, describeEachEngine } from '../../../support/engines.ts';
import type { SharedTestDatabase } from '../../../support/engines.ts';
import { freePort } from '../../../support/ports.ts';
import { callProcess as call, startProcess } from '../../../support/processes.ts';
import type { RunningProcess } from '../../../support/processes.ts';
import { NO_DEVICE_LISTENERS } from '../../../support/server.ts';
import { Tracker } from './tracker.ts';

const OWNER = { email: 'commands-killed@example.com', password: 'Commands-Password-1' };
const UNIQUE_ID = '359710049099001';


describeEachEngine('queued commands outlive the process that queued them', (engine) => {
  let shared: SharedTestDatabase;
  let env: Record<string, string>;
  let running: RunningProcess | undefined;

  before(async () => {
    shared = await createSharedDatabase(engine, 'trackstack-commands-killed-');
    env = { DATA_DIR: shared.dataDir, DATABASE_URL: shared.url, RATE_LIMITS: 'off', ...NO_DEVICE_LISTENERS };
  });
  after(async () => {
    await running?.stop();
    await shared.dispose();
  });

  it('commands queued just before SIGKILL go out in order, once, when the device connects to the next process', async () => {
    running = await startProcess(env);
    const created = await runUserCommand(loadConfig(env), ['create', '--email', OWNER.email, '--password', OWNER.password]);
    assert.equal(created.exitCode, 0, created.output);
    const login = await call(running.url, 'POST', '/api/auth/login', undefined, OWNER);
    assert.equal(login.status, 200, JSON.stringify(login.body));
    const token = (login.body as { accessToken: string }).accessToken;
    const device = await call(running.url, 'POST', '/api/devices/', token, { name: 'Killed', uniqueId: UNIQUE_ID });
    assert.equal(device.status, 201, JSON.stringify(device.body));
    const deviceId = (device.body as { id: number }).id;
    const ids: number[] = [];
    for (const data of ['FIRST#', 'SECOND#', 'THIRD#']) {
      const queued = await call(running.url, 'POST', '/api/commands/send', token, { deviceId, type: 'custom', attributes: { data } });
      assert.equal(queued.status, 202, JSON.stringify(queued.body));
      ids.push((queued.body as { id: number }).id);
    }
    running.child.kill('SIGKILL');
    await running.stop();

    const port = await freePort();
    running = await startProcess({ ...env, GT06_PORT: String(port) });
    const tracker = await Tracker.connect('gt06', port, UNIQUE_ID);
    const received = [await tracker.nextCommand(), await tracker.nextCommand(), await tracker.nextCommand()];
    assert.deepEqual(received.map((frame) => frame.readUInt32BE(5)), ids);
    assert.deepEqual(received.map((frame) => frame.subarray(9, frame.length - 6).toString('latin1')), ['FIRST#', 'SECOND#', 'THIRD#']);
    await tracker.close();

    const again = await Tracker.connect('gt06', port, UNIQUE_ID);
    await again.report();
    assert.equal(again.pendingCommands, 0, 'nothing is sent twice');
    await again.close();
    const history = await call(running.url, 'GET', `/api/commands/history?deviceId=${deviceId}`, token);
    assert.deepEqual((history.body as { status: string }[]).map((command) => command.status), ['sent', 'sent', 'sent']);
  });
});
