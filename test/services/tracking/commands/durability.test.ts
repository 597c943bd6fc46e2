import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachEngine } from '../../../support/engines.ts';
import { createAccountAndSignIn, killableProcesses } from '../../../support/killable-processes.ts';
import { freePort } from '../../../support/ports.ts';
import { callProcess as call } from '../../../support/processes.ts';
import { Tracker } from './tracker.ts';

const OWNER = { email: 'commands-killed@example.com', password: 'Commands-Password-1' };
const UNIQUE_ID = '359710049099001';

describeEachEngine('queued commands outlive the process that queued them', (engine) => {
  const processes = killableProcesses(engine, 'trackstack-commands-killed-');

  it('commands queued just before SIGKILL go out in order, once, when the device connects to the next process', async () => {
    let running = await processes.start();
    const { accessToken: token } = await createAccountAndSignIn(processes.env, running.url, OWNER);
    const device = await call(running.url, 'POST', '/api/devices/', token, { name: 'Killed', uniqueId: UNIQUE_ID });
    assert.equal(device.status, 201, JSON.stringify(device.body));
    const deviceId = (device.body as { id: number }).id;
    const ids: number[] = [];
    for (const data of ['FIRST#', 'SECOND#', 'THIRD#']) {
      const queued = await call(running.url, 'POST', '/api/commands/send', token, { deviceId, type: 'custom', attributes: { data } });
      assert.equal(queued.status, 202, JSON.stringify(queued.body));
      ids.push((queued.body as { id: number }).id);
    }
    await processes.kill();

    const port = await freePort();
    running = await processes.start({ GT06_PORT: String(port) });
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
