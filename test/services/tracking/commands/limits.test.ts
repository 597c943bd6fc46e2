import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { assertError } from '../../../support/api.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';
import { createDevice } from '../support/tracking.ts';

const send = (server: TestServer, user: TestLogin, deviceId: number, data: string) =>
  server.app.inject({ method: 'POST', url: '/api/commands/send', headers: user.authorization, payload: { deviceId, type: 'custom', attributes: { data } } });

async function historyOf(server: TestServer, user: TestLogin, deviceId: number): Promise<string[]> {
  const response = await server.app.inject({ method: 'GET', url: `/api/commands/history?deviceId=${deviceId}`, headers: user.authorization });
  assert.equal(response.statusCode, 200, response.body);
  return response.json().map((command: { attributes: { data: string } }) => command.attributes.data);
}

describeEachEngine('commands queued for one device (MAX_QUEUED_COMMANDS_PER_DEVICE)', (engine) => {
  let server: TestServer;
  let owner: TestLogin;
  let admin: TestLogin;
  before(async () => {
    server = await startTestServer(engine, { MAX_QUEUED_COMMANDS_PER_DEVICE: '3' });
    owner = await server.login({ email: 'queue-cap-owner@example.com' });
    admin = await server.login({ email: 'queue-cap-admin@example.com', administrator: true });
  });
  after(() => server.dispose());

  it('past the cap a send answers 409 COMMAND_QUEUE_FULL and queues nothing, administrators too; other devices are not held back', async () => {
    const deviceId = await createDevice(server, owner, 'queue-cap-1');
    for (const data of ['1#', '2#', '3#']) assert.equal((await send(server, owner, deviceId, data)).statusCode, 202);
    const refused = await send(server, owner, deviceId, '4#');
    assertError(refused, 409, 'COMMAND_QUEUE_FULL', /3 commands wait for this device/);
    assert.deepEqual(refused.json().details, [{ path: '/body/deviceId', message: 'the queue of this device is full', limit: 'queuedCommandsPerDevice', max: 3, usage: 3 }]);
    assertError(await send(server, admin, deviceId, '5#'), 409, 'COMMAND_QUEUE_FULL');
    assert.deepEqual(await historyOf(server, owner, deviceId), ['1#', '2#', '3#']);

    const other = await createDevice(server, owner, 'queue-cap-2');
    assert.equal((await send(server, owner, other, 'A#')).statusCode, 202);
  });

  it('sends racing for the last places queue no more than the cap', async () => {
    const deviceId = await createDevice(server, owner, 'queue-cap-race');
    const answers = await Promise.all(Array.from({ length: 12 }, (_, index) => send(server, owner, deviceId, `${index}#`)));
    assert.deepEqual(answers.map((answer) => answer.statusCode).sort(), [202, 202, 202, ...Array<number>(9).fill(409)]);
    assert.equal((await historyOf(server, owner, deviceId)).length, 3);
  });
});

describeEachEngine('sends per user (COMMAND_SEND_RATE)', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, { COMMAND_SEND_RATE: '4' });
  });
  after(() => server.dispose());

  it('past the rate a send answers 429 RATE_LIMITED with Retry-After and queues nothing; refused sends count; other users go on', async () => {
    const hasty = await server.login({ email: 'send-rate-hasty@example.com' });
    const deviceId = await createDevice(server, hasty, 'send-rate-1');
    assertError(await server.app.inject({ method: 'POST', url: '/api/commands/send', headers: hasty.authorization, payload: { deviceId: 999_999, type: 'custom', attributes: { data: 'x' } } }), 404, 'NOT_FOUND');
    for (const data of ['1#', '2#', '3#']) assert.equal((await send(server, hasty, deviceId, data)).statusCode, 202);
    const refused = await send(server, hasty, deviceId, '4#');
    assertError(refused, 429, 'RATE_LIMITED');
    const retryAfter = Number(refused.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${refused.headers['retry-after']}`);
    assert.deepEqual(await historyOf(server, hasty, deviceId), ['1#', '2#', '3#']);

    const calm = await server.login({ email: 'send-rate-calm@example.com' });
    assert.equal((await send(server, calm, await createDevice(server, calm, 'send-rate-2'), 'A#')).statusCode, 202);
  });
});
