import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../../../src/config.ts';
import { createApnsSender } from '../../../../src/services/notifications/push/apns.ts';
import type { ApnsSender, ApnsSenderOptions } from '../../../../src/services/notifications/push/apns.ts';
import type { PushMessage, PushTarget } from '../../../../src/services/notifications/push/push-sender.ts';
import { startApnsService, testClock } from '../../../support/push-providers.ts';
import type { ApnsService, TestClock } from '../../../support/push-providers.ts';

const MESSAGE: PushMessage = {
  title: 'SOS from Grandpa',
  body: 'Grandpa pressed SOS at 14:02',
  url: '/devices/12/events/7',
  data: { eventId: '7', deviceId: '12', type: 'alarm', alarm: 'sos' },
  collapseKey: 'rule-9:device-12:alarm:sos',
};
const never = new AbortController().signal;
let counter = 0;
const newTarget = (): PushTarget => ({ id: `t${++counter}`, kind: 'apns', token: (counter.toString(16).padStart(8, '0') + 'ab').repeat(7).slice(0, 64) });

function senderFor(service: ApnsService, options: ApnsSenderOptions, env: Record<string, string> = {}): ApnsSender {
  const sender = createApnsSender(loadConfig({ ...service.env, ...env }).push.apns, options);
  assert.ok(sender);
  return sender;
}

describe('APNs sender', () => {
  let service: ApnsService;
  let clock: TestClock;
  let sender: ApnsSender;

  before(async () => {
    clock = testClock();
    service = await startApnsService({ clock });
    sender = senderFor(service, { ca: service.ca, now: clock.now });
  });
  after(async () => {
    await sender.close();
    await service.close();
  });

  it('is not offered without APNS_KEY', () => {
    assert.equal(createApnsSender(loadConfig({}).push.apns), undefined);
  });

  it('sends an alert over TLS with the provider token, topic and collapse id', async () => {
    const target = newTarget();
    assert.deepEqual(await sender.send(target, MESSAGE, never), { kind: 'sent' });
    assert.deepEqual(service.received.at(-1), {
      deviceToken: target.token,
      payload: {
        aps: { alert: { title: MESSAGE.title, body: MESSAGE.body }, sound: 'default', 'thread-id': MESSAGE.collapseKey },
        url: MESSAGE.url,
        data: MESSAGE.data,
      },
      pushType: 'alert',
      collapseId: MESSAGE.collapseKey,
      priority: '10',
    });
  });

  it('keeps one connection and one provider token for many sends, a new token after 50 minutes', async () => {
    const fresh = testClock();
    const own = await startApnsService({ clock: fresh });
    const ownSender = senderFor(own, { ca: own.ca, now: fresh.now });
    try {
      const outcomes = await Promise.all(Array.from({ length: 5 }, () => ownSender.send(newTarget(), MESSAGE, never)));
      assert.deepEqual(outcomes, Array.from({ length: 5 }, () => ({ kind: 'sent' })));
      assert.equal(own.connections, 1);
      assert.equal(own.providerTokens.size, 1);
      fresh.advance(45 * 60_000);
      assert.deepEqual(await ownSender.send(newTarget(), MESSAGE, never), { kind: 'sent' });
      assert.equal(own.providerTokens.size, 1);
      fresh.advance(6 * 60_000);
      assert.deepEqual(await ownSender.send(newTarget(), MESSAGE, never), { kind: 'sent' });
      assert.equal(own.providerTokens.size, 2);
      assert.equal(own.connections, 1);
    } finally {
      await ownSender.close();
      await own.close();
    }
  });

  it('reconnects when APNs closes the connection', async () => {
    assert.deepEqual(await sender.send(newTarget(), MESSAGE, never), { kind: 'sent' });
    const connections = service.connections;
    service.dropConnections();
    let outcome = await sender.send(newTarget(), MESSAGE, never);
    // The drop may land before the sender notices; the next send then goes over a new connection.
    if (outcome.kind === 'retry') outcome = await sender.send(newTarget(), MESSAGE, never);
    assert.deepEqual(outcome, { kind: 'sent' });
    assert.equal(service.connections, connections + 1);
  });

  it('signs a new provider token when APNs says the current one expired, and sends', async () => {
    assert.deepEqual(await sender.send(newTarget(), MESSAGE, never), { kind: 'sent' });
    const tokens = service.providerTokens.size;
    service.expireProviderTokens();
    assert.deepEqual(await sender.send(newTarget(), MESSAGE, never), { kind: 'sent' });
    assert.equal(service.providerTokens.size, tokens + 1);
  });

  it('reports an unregistered device (410) and a bad device token (400) as gone', async () => {
    const target = newTarget();
    service.unregister(target.token as string);
    assert.deepEqual(await sender.send(target, MESSAGE, never), { kind: 'gone', error: 'APNs answered 410: Unregistered' });
    assert.deepEqual(await sender.send({ id: 'bad', kind: 'apns', token: 'not-hex/../x' }, MESSAGE, never), {
      kind: 'gone',
      error: 'APNs answered 400: BadDeviceToken',
    });
  });

  it('retries on 5xx and 429 with Retry-After, and gives up on another 4xx', async () => {
    service.failNext(503, 'ServiceUnavailable', { 'retry-after': '60' });
    assert.deepEqual(await sender.send(newTarget(), MESSAGE, never), { kind: 'retry', error: 'APNs answered 503: ServiceUnavailable', retryAfterMs: 60_000 });
    service.failNext(429, 'TooManyRequests');
    assert.deepEqual(await sender.send(newTarget(), MESSAGE, never), { kind: 'retry', error: 'APNs answered 429: TooManyRequests' });
    service.failNext(413, 'PayloadTooLarge');
    assert.deepEqual(await sender.send(newTarget(), MESSAGE, never), { kind: 'final', error: 'APNs answered 413: PayloadTooLarge' });
  });

  it('retries when APNs does not answer in time or the caller gives up', async () => {
    const impatient = senderFor(service, { ca: service.ca, now: clock.now, timeoutMs: 200 });
    try {
      void service.stallNext();
      assert.deepEqual(await impatient.send(newTarget(), MESSAGE, never), { kind: 'retry', error: 'APNs: no answer in time' });
      const arrived = service.stallNext();
      const caller = new AbortController();
      const pending = sender.send(newTarget(), MESSAGE, caller.signal);
      await arrived;
      caller.abort();
      assert.deepEqual(await pending, { kind: 'retry', error: 'APNs: request aborted' });
      assert.deepEqual(await impatient.send(newTarget(), MESSAGE, never), { kind: 'sent' });
    } finally {
      await impatient.close();
    }
  });

  it('is refused by APNs with another key, another team or another topic', async () => {
    const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const cases: [Record<string, string>, string][] = [
      [{ APNS_KEY: stranger }, 'APNs answered 403: InvalidProviderToken'],
      [{ APNS_KEY_ID: 'OTHERKEY01' }, 'APNs answered 403: InvalidProviderToken'],
      [{ APNS_TEAM_ID: 'OTHERTEAM1' }, 'APNs answered 403: InvalidProviderToken'],
      [{ APNS_TOPIC: 'com.example.other' }, 'APNs answered 400: TopicDisallowed'],
    ];
    const before = service.received.length;
    for (const [env, error] of cases) {
      const wrong = senderFor(service, { ca: service.ca, now: clock.now }, env);
      try {
        assert.deepEqual(await wrong.send(newTarget(), MESSAGE, never), { kind: 'final', error }, JSON.stringify(Object.keys(env)));
      } finally {
        await wrong.close();
      }
    }
    assert.equal(service.received.length, before);
  });

  it('does not trust a server certificate from outside its CAs', async () => {
    const untrusting = senderFor(service, { now: clock.now });
    try {
      const outcome = await untrusting.send(newTarget(), MESSAGE, never);
      assert.equal(outcome.kind, 'retry');
      assert.match(outcome.kind === 'retry' ? outcome.error : '', /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|unable to verify/i);
    } finally {
      await untrusting.close();
    }
  });

  it('keeps a process alive while a request is in flight, not while idle, trusting NODE_EXTRA_CA_CERTS', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'trackstack-apns-'));
    try {
      const caFile = path.join(dir, 'ca.pem');
      writeFileSync(caFile, service.ca);
      const target = newTarget();
      // No close(): the child must stay up for the answer, then exit by itself.
      const script = [
        `import { loadConfig } from ${JSON.stringify(pathToFileURL(path.resolve('src/config.ts')).href)};`,
        `import { createApnsSender } from ${JSON.stringify(pathToFileURL(path.resolve('src/services/notifications/push/apns.ts')).href)};`,
        'const sender = createApnsSender(loadConfig().push.apns);',
        `const outcome = await sender.send(${JSON.stringify(target)}, ${JSON.stringify(MESSAGE)}, new AbortController().signal);`,
        'console.log(JSON.stringify(outcome));',
      ].join('\n');
      const child = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
        env: { PATH: process.env.PATH, ...service.env, NODE_EXTRA_CA_CERTS: caFile },
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.equal(child.stdout.trim(), '{"kind":"sent"}');
      assert.equal(service.received.at(-1)?.deviceToken, target.token);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a key that is not Apple’s P-256 key at start, naming the variable in one line', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const cases: [string, string][] = [
      ['-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----', 'APNS_KEY: not a readable private key'],
      [rsa, 'APNS_KEY: must be the P-256 (ES256) key from Apple (.p8)'],
    ];
    for (const [pem, message] of cases) {
      assert.throws(
        () => createApnsSender(loadConfig({ ...service.env, APNS_KEY: pem }).push.apns),
        (error: unknown) => error instanceof ConfigError && error.message === message,
      );
    }
  });
});
