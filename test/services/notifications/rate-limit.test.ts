import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { USER_MESSAGE_RULE } from '../../../src/services/notifications/deliveries/worker.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { Client } from '../devices/helpers.ts';
import { deliveries, deliverNow, RecordingPushSender } from './helpers.ts';

const MINUTE = 60_000;

/** Per-user message rate (DESIGN §5.6, 30 a minute): a chatty device floods no phone, and what waits folds into fewer messages. */
describeEachEngine('notification rate per user', (engine) => {
  let server: TestServer;
  let push: RecordingPushSender;
  let clock = Date.parse('2026-05-01T08:00:00Z');
  let chatty: Client;
  let quiet: Client;
  let chattyDevice: number;
  let quietDevice: number;
  let chattyTarget: string;

  before(async () => {
    push = new RecordingPushSender();
    // The limiter's windows, the collapse windows and the worker all run on this clock: time is moved, not waited for.
    server = await startTestServer(engine, {}, { pushSenders: new Map([['fcm', push]]), notificationsClock: () => clock });
    await server.notifications?.worker.stop();
    chatty = new Client(server, await server.login({ email: 'rate-chatty@example.com' }));
    quiet = new Client(server, await server.login({ email: 'rate-quiet@example.com' }));
    chattyDevice = (await chatty.post('/api/devices/', { name: 'Chatty', uniqueId: 'rate-chatty' })).body.id;
    quietDevice = (await quiet.post('/api/devices/', { name: 'Quiet', uniqueId: 'rate-quiet' })).body.id;
    for (const [client, deviceId, token] of [[chatty, chattyDevice, 'fcm-chatty'], [quiet, quietDevice, 'fcm-quiet']] as const) {
      const target = await client.post('/api/notifications/targets', { kind: 'fcm', token });
      assert.equal(target.status, 201, JSON.stringify(target.body));
      if (client === chatty) chattyTarget = String(target.body.id);
      const rule = await client.post('/api/notifications', { type: 'alarm', deviceIds: [deviceId], channels: ['fcm'] });
      assert.equal(rule.status, 201, JSON.stringify(rule.body));
    }
  });
  after(() => server.dispose());

  const storeAlarms = (deviceId: number, alarms: string[]) =>
    server.tracking!.api.storeEvents(alarms.map((alarm) => ({ type: 'alarm' as const, eventTime: clock, deviceId, attributes: { alarm } })));
  const sentTo = (target: string) => push.sent.filter((call) => call.target.id === target);
  const stateCounts = (rows: { state: string }[]) => rows.reduce<Record<string, number>>((counts, row) => ({ ...counts, [row.state]: (counts[row.state] ?? 0) + 1 }), {});

  it('sends 30 messages a minute per user, defers the rest to the next window, folds repeats into them and says how many', async () => {
    const start = clock;
    // 35: more than the limit, and no more than one target holds in a process (4 sending, 32 waiting), so none is sent back to the queue for a second.
    const distinct = Array.from({ length: 35 }, (_, index) => `a${index}`);
    const deferred = distinct.length - USER_MESSAGE_RULE.limit;
    await storeAlarms(chattyDevice, distinct);
    await deliverNow(server);
    assert.equal(sentTo(chattyTarget).length, USER_MESSAGE_RULE.limit, 'no more than the limit within the minute');
    await storeAlarms(quietDevice, ['sos']);
    await deliverNow(server);
    assert.equal(push.sent.length, USER_MESSAGE_RULE.limit + 1, 'another user is not held back by the chatty one');
    let rows = await deliveries(server);
    const chattyRows = rows.slice(0, distinct.length);
    assert.deepEqual(stateCounts(chattyRows), { sent: USER_MESSAGE_RULE.limit, pending: deferred });
    for (const row of chattyRows.filter((candidate) => candidate.state === 'pending')) {
      assert.equal(row.attempts, 0, 'a deferral is not a failed attempt');
      assert.equal(row.last_error, null);
      assert.equal(row.available_at, start + MINUTE, 'deferred to the end of the window');
    }
    const sentTitles = new Set(sentTo(chattyTarget).map((call) => call.message.title));
    const waiting = distinct.filter((alarm) => !sentTitles.has(`Chatty: ${alarm} alarm`));
    assert.equal(waiting.length, deferred);

    // More of the chatty device within the minute: repeats of a waiting message fold into it; a repeat
    // of one already sent waits for its window, and the one after folds into that.
    const repeatedWaiting = waiting[0] as string;
    const repeatedSent = distinct.find((alarm) => !waiting.includes(alarm)) as string;
    clock += 10_000;
    await storeAlarms(chattyDevice, [repeatedWaiting, repeatedWaiting, repeatedSent, repeatedSent]);
    await deliverNow(server);
    assert.equal(sentTo(chattyTarget).length, USER_MESSAGE_RULE.limit, 'still nothing beyond the limit');
    rows = await deliveries(server);
    const added = rows.slice(-4);
    const carrier = chattyRows.find((row) => row.id === added[0]?.collapsed_into);
    assert.equal(carrier?.state, 'pending', 'the repeats of a waiting message are collapsed into it');
    assert.deepEqual(added.map((row) => row.state), ['collapsed', 'collapsed', 'pending', 'collapsed']);
    assert.equal(added[1]?.collapsed_into, carrier?.id);
    assert.equal(added[3]?.collapsed_into, added[2]?.id);
    assert.equal(added[2]?.available_at, start + MINUTE, 'a repeat of a sent message waits for the end of its minute');

    // The next window: what waited goes, each once, saying how many events it stands for.
    clock = start + MINUTE;
    await deliverNow(server);
    const titles = sentTo(chattyTarget).slice(USER_MESSAGE_RULE.limit).map((call) => call.message.title);
    assert.equal(titles.length, deferred + 1, 'the deferred messages and the repeat of a sent one');
    assert.ok(titles.includes(`Chatty: ${repeatedWaiting} alarm (3 times in the last minute)`), titles.join('\n'));
    assert.ok(titles.includes(`Chatty: ${repeatedSent} alarm (2 times in the last minute)`), titles.join('\n'));
    // The chatty user's 35 and the repeat of a sent one, the quiet user's one; 3 folded into others.
    assert.deepEqual(stateCounts(await deliveries(server)), { sent: distinct.length + 2, collapsed: 3 });
  });

  it('spends none of the quota on messages held back by an open circuit', async () => {
    clock += 5 * MINUTE;
    const user = new Client(server, await server.login({ email: 'rate-dead-phone@example.com' }));
    const deviceId = (await user.post('/api/devices/', { name: 'Dead phone', uniqueId: 'rate-dead-phone' })).body.id;
    const target = String((await user.post('/api/notifications/targets', { kind: 'fcm', token: 'fcm-dead' })).body.id);
    assert.equal((await user.post('/api/notifications', { type: 'alarm', deviceIds: [deviceId], channels: ['fcm'] })).status, 201);
    assert.equal((await user.post('/api/notifications', { type: 'ignitionOn', deviceIds: [deviceId], channels: ['mail'] })).status, 201);
    const before = (await deliveries(server)).length;

    // Five failures open the phone's circuit; then many more messages for it wait for the cool-down.
    push.outcomes.push(...Array.from({ length: 5 }, () => ({ kind: 'retry' as const, error: 'HTTP 503' })));
    await storeAlarms(deviceId, ['d0', 'd1', 'd2', 'd3', 'd4']);
    await deliverNow(server);
    clock += 1000;
    await storeAlarms(deviceId, Array.from({ length: USER_MESSAGE_RULE.limit }, (_, index) => `e${index}`));
    await deliverNow(server);
    assert.equal(sentTo(target).length, 5, 'nothing is sent while the circuit is open');

    // The user's mail still goes: the held-back push messages took none of the 30.
    await server.tracking!.api.storeEvents([{ type: 'ignitionOn', eventTime: clock, deviceId, attributes: {} }]);
    await deliverNow(server);
    const rows = (await deliveries(server)).slice(before);
    assert.deepEqual(rows.filter((row) => row.channel === 'mail').map((row) => row.state), ['sent']);
    assert.deepEqual(stateCounts(rows.filter((row) => row.channel === 'fcm')), { pending: 5 + USER_MESSAGE_RULE.limit });
  });
});
