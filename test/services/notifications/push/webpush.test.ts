import assert from 'node:assert/strict';
import { createECDH, createPrivateKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SignJWT } from 'jose';
import webPush from 'web-push';
import { ConfigError, loadConfig } from '../../../../src/config.ts';
import type { HostLookup } from '../../../../src/services/notifications/channels/addresses.ts';
import type { PushMessage, PushTarget } from '../../../../src/services/notifications/push/push-sender.ts';
import { loadVapidKeys, subscriptionProblem, WebPushSender } from '../../../../src/services/notifications/push/webpush.ts';
import type { VapidKeys } from '../../../../src/services/notifications/push/webpush.ts';
import { freePort } from '../../../support/ports.ts';
import { decryptWebPush, startWebPushService, webPushKeySchedule } from '../../../support/push-providers.ts';
import type { WebPushService } from '../../../support/push-providers.ts';

const MESSAGE: PushMessage = {
  title: 'Rex left Garden',
  body: 'Rex left the geofence Garden at 03:12',
  url: '/devices/7/events/42',
  data: { eventId: '42', deviceId: '7', type: 'geofenceExit' },
  collapseKey: 'rule-3:device-7:geofenceExit',
};

const never = new AbortController().signal;
/** The local push service listens on 127.0.0.1 over http, as NOTIFY_ALLOW_PRIVATE_URLS=true allows. */
const LOCAL = { allowPrivateEndpoints: true };
const b64 = (text: string) => Buffer.from(text, 'base64url');

function vapidKey(keys: VapidKeys): KeyObject {
  const point = b64(keys.publicKey);
  return createPrivateKey({
    format: 'jwk',
    key: { kty: 'EC', crv: 'P-256', d: keys.privateKey, x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') },
  });
}

function target(subscription: PushTarget['subscription']): PushTarget {
  return { id: 'target-1', kind: 'webpush', subscription };
}

describe('RFC 8291 decryption used by the Web Push fake', () => {
  it('decrypts the published example of Appendix A, through every intermediate value', () => {
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(b64('q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94'));
    assert.equal(ecdh.getPublicKey().toString('base64url'), 'BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4');
    const receiver = { ecdh, authSecret: b64('BTBZMqHH6r4Tts7J_aSIgg') };
    const schedule = webPushKeySchedule(
      receiver,
      b64('BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8'),
      b64('DGv6ra1nlYgDCS1FRnbzlw'),
    );
    assert.equal(schedule.ecdhSecret.toString('base64url'), 'kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs');
    assert.equal(schedule.ikm.toString('base64url'), 'S4lYMb_L0FxCeq0WhDx813KgSYqU26kOyzWUdsXYyrg');
    assert.equal(schedule.cek.toString('base64url'), 'oIhVW04MRdy2XN9CiKLxTg');
    assert.equal(schedule.nonce.toString('base64url'), '4h_95klXJ5E_qnoN');
    const body = b64(
      'DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN',
    );
    assert.equal(decryptWebPush(body, receiver).toString('utf8'), 'When I grow up, I want to be a watermelon');
    const tampered = Buffer.from(body);
    tampered[tampered.length - 1] = (tampered[tampered.length - 1] as number) ^ 1;
    assert.throws(() => decryptWebPush(tampered, receiver), /authenticate/);
  });
});

describe('Web Push sender', () => {
  let service: WebPushService;
  let dataDir: string;
  let sender: WebPushSender;

  before(async () => {
    service = await startWebPushService();
    dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-webpush-'));
    sender = new WebPushSender(loadVapidKeys(loadConfig({ MAIL_FROM: 'Acme <alerts@acme.example>' }).push.vapid, dataDir), LOCAL);
  });
  after(async () => {
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('generates the VAPID pair into DATA_DIR once, privately, and reuses it', () => {
    const file = path.join(dataDir, 'vapid-private.pem');
    assert.match(readFileSync(file, 'utf8'), /BEGIN PRIVATE KEY/);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const again = loadVapidKeys(loadConfig({}).push.vapid, dataDir);
    assert.equal(again.publicKey, sender.publicKey);
    assert.equal(b64(sender.publicKey).length, 65);
  });

  it('sends an encrypted message that the browser decrypts, with VAPID for the endpoint origin', async () => {
    const subscription = service.subscribe(sender.publicKey);
    assert.deepEqual(await sender.send(target(subscription), MESSAGE, never), { kind: 'sent' });
    const received = service.received.at(-1);
    assert.ok(received);
    assert.equal(received.endpoint, subscription.endpoint);
    assert.deepEqual(JSON.parse(received.plaintext), {
      title: MESSAGE.title,
      body: MESSAGE.body,
      url: MESSAGE.url,
      data: MESSAGE.data,
      tag: MESSAGE.collapseKey,
    });
    assert.equal(received.vapidSubject, 'mailto:alerts@acme.example');
    assert.equal(received.ttl, 86_400);
    assert.equal(received.urgency, 'high');
    assert.match(received.topic ?? '', /^[A-Za-z0-9_-]{32}$/);
  });

  it('uses configured VAPID keys, and the push service refuses a subscription made with another key', async () => {
    const keys = webPush.generateVAPIDKeys();
    const configured = loadConfig({
      VAPID_PUBLIC_KEY: keys.publicKey,
      VAPID_PRIVATE_KEY: keys.privateKey,
      VAPID_SUBJECT: 'https://acme.example/contact',
    }).push.vapid;
    const configuredSender = new WebPushSender(loadVapidKeys(configured, dataDir), LOCAL);
    assert.equal(configuredSender.publicKey, keys.publicKey);
    assert.deepEqual(await configuredSender.send(target(service.subscribe(configuredSender.publicKey)), MESSAGE, never), { kind: 'sent' });
    assert.equal(service.received.at(-1)?.vapidSubject, 'https://acme.example/contact');

    const outcome = await configuredSender.send(target(service.subscribe(sender.publicKey)), MESSAGE, never);
    assert.equal(outcome.kind, 'final');
    assert.match(service.refused.at(-1)?.reason ?? '', /applicationServerKey/);
  });

  it('the local push service refuses a VAPID JWT for another origin, expired, or without a subject', async () => {
    const keys = loadVapidKeys(loadConfig({}).push.vapid, dataDir);
    const subscription = service.subscribe(keys.publicKey);
    const now = Math.floor(Date.now() / 1000);
    const cases: [string, string, number | undefined, RegExp][] = [
      ['https://push.example.com', keys.subject, undefined, /aud/],
      [service.origin, keys.subject, now - 60, /exp/],
      [service.origin, 'http://acme.example', undefined, /sub/],
    ];
    for (const [audience, subject, expiration, problem] of cases) {
      const request = webPush.generateRequestDetails(subscription, 'hello', { vapidDetails: keys });
      // web-push validates the subject; the bad one is signed here by hand with the same key.
      const header = subject === keys.subject
        ? webPush.getVapidHeaders(audience, subject, keys.publicKey, keys.privateKey, 'aes128gcm', expiration).Authorization
        : `vapid t=${await new SignJWT({ sub: subject }).setProtectedHeader({ alg: 'ES256' }).setAudience(audience).setExpirationTime(now + 3600).sign(vapidKey(keys))}, k=${keys.publicKey}`;
      const response = await fetch(subscription.endpoint, {
        method: 'POST',
        headers: { ...Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)])), Authorization: header },
        body: request.body,
      });
      assert.equal(response.status, 401, String(problem));
      assert.match(service.refused.at(-1)?.reason ?? '', problem);
    }
  });

  it('reports a subscription the service says is gone (404 and 410)', async () => {
    for (const status of [404, 410] as const) {
      const subscription = service.subscribe(sender.publicKey);
      service.expire(subscription.endpoint, status);
      const outcome = await sender.send(target(subscription), MESSAGE, never);
      assert.equal(outcome.kind, 'gone', String(status));
      assert.match(outcome.kind === 'gone' ? outcome.error : '', new RegExp(String(status)));
    }
  });

  it('retries on 5xx, 408 and 429, honouring Retry-After in seconds or as a date', async () => {
    const subscription = service.subscribe(sender.publicKey);
    service.failNext(503, 'maintenance', { 'retry-after': '120' });
    assert.deepEqual(await sender.send(target(subscription), MESSAGE, never), { kind: 'retry', error: 'Web Push service answered 503', retryAfterMs: 120_000 });
    service.failNext(429, '', { 'retry-after': new Date(Date.now() + 60_000).toUTCString() });
    const limited = await sender.send(target(subscription), MESSAGE, never);
    assert.equal(limited.kind, 'retry');
    const after = limited.kind === 'retry' ? (limited.retryAfterMs ?? 0) : 0;
    assert.ok(after > 50_000 && after <= 60_000, String(after));
    service.failNext(408);
    assert.deepEqual(await sender.send(target(subscription), MESSAGE, never), { kind: 'retry', error: 'Web Push service answered 408' });
    assert.deepEqual(await sender.send(target(subscription), MESSAGE, never), { kind: 'sent' });
  });

  it('keeps nothing of the answer body in the error: the endpoint is the user\'s choice', async () => {
    const subscription = service.subscribe(sender.publicKey);
    service.failNext(400, 'internal-service-secret');
    assert.deepEqual(await sender.send(target(subscription), MESSAGE, never), { kind: 'final', error: 'Web Push service answered 400' });
  });

  it('gives up on any other 4xx', async () => {
    const subscription = service.subscribe(sender.publicKey);
    service.failNext(413, 'payload too large');
    assert.deepEqual(await sender.send(target(subscription), MESSAGE, never), { kind: 'final', error: 'Web Push service answered 413' });
  });

  it('retries when the service is unreachable or does not answer in time, saying nothing of why', async () => {
    const closed = service.subscribe(sender.publicKey);
    const opaque = { kind: 'retry', error: 'Web Push service unreachable' };
    assert.deepEqual(await sender.send(target({ ...closed, endpoint: `http://127.0.0.1:${await freePort()}/push/x` }), MESSAGE, never), opaque);

    const silent = http.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/push/x`;
      const impatient = new WebPushSender(loadVapidKeys(loadConfig({}).push.vapid, dataDir), { ...LOCAL, timeoutMs: 200 });
      assert.deepEqual(await impatient.send(target({ ...closed, endpoint }), MESSAGE, never), opaque);
      const aborted = new AbortController();
      const pending = sender.send(target({ ...closed, endpoint }), MESSAGE, aborted.signal);
      aborted.abort();
      assert.deepEqual(await pending, opaque);
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('refuses a target whose subscription cannot be used, without sending', async () => {
    const good = service.subscribe(sender.publicKey);
    const before = service.received.length;
    assert.equal(subscriptionProblem(good, true), undefined);
    const cases: [PushTarget['subscription'], RegExp][] = [
      [{ ...good, endpoint: 'ftp://push.example.com/x' }, /http\(s\)/],
      [{ ...good, endpoint: 'not a url' }, /not a URL/],
      [{ ...good, keys: { ...good.keys, p256dh: 'AAAA' } }, /p256dh/],
      [{ ...good, keys: { ...good.keys, auth: 'AAAA' } }, /auth/],
      [undefined, /without a subscription/],
    ];
    for (const [subscription, problem] of cases) {
      const outcome = await sender.send(target(subscription), MESSAGE, never);
      assert.equal(outcome.kind, 'final');
      assert.match(outcome.kind === 'final' ? outcome.error : '', problem);
    }
    assert.equal(service.received.length, before);
  });

  it('sends only to push services named by host over https unless private endpoints are allowed', async () => {
    const strict = new WebPushSender(loadVapidKeys(loadConfig({}).push.vapid, dataDir));
    const good = service.subscribe(strict.publicKey);
    const before = service.received.length;
    const refused: [string, RegExp][] = [
      [good.endpoint, /https/],
      ['http://push.example.com/x', /https/],
      ['https://127.0.0.1/x', /host name/],
      ['https://10.0.0.7/x', /host name/],
      ['https://[::1]/x', /host name/],
      ['https://[fd00::1]:8443/x', /host name/],
      ['https://localhost/x', /host name/],
      ['https://metrics.localhost/x', /host name/],
    ];
    for (const [endpoint, problem] of refused) {
      const outcome = await strict.send(target({ ...good, endpoint }), MESSAGE, never);
      assert.equal(outcome.kind, 'final', endpoint);
      assert.match(outcome.kind === 'final' ? outcome.error : '', problem, endpoint);
      assert.match(subscriptionProblem({ ...good, endpoint }) ?? '', problem, endpoint);
    }
    assert.equal(subscriptionProblem({ ...good, endpoint: 'https://fcm.googleapis.com/fcm/send/abc' }), undefined);
    assert.equal(subscriptionProblem(good, true), undefined);
    assert.equal(service.received.length, before);
  });

  it('vets the endpoint host again at each send and connects to the address vetted: a name now pointing at a local listener reaches nothing', async () => {
    const listener = net.createServer((socket) => socket.destroy());
    let connections = 0;
    listener.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    try {
      const port = (listener.address() as AddressInfo).port;
      const lookup: HostLookup = async () => [{ address: '127.0.0.1', family: 4 }];
      const strict = new WebPushSender(loadVapidKeys(loadConfig({}).push.vapid, dataDir), { lookup });
      const subscription = { ...service.subscribe(strict.publicKey), endpoint: `https://push.rebound.test:${port}/push/x` };
      assert.equal(subscriptionProblem(subscription), undefined, 'a push service named by host over https');
      assert.deepEqual(await strict.send(target(subscription), MESSAGE, never), {
        kind: 'final',
        error: 'Web Push endpoint refused: the host resolves to a loopback, private, link-local or otherwise non-public address',
      });
      assert.equal(connections, 0);

      // NOTIFY_ALLOW_PRIVATE_URLS: the same name reaches the local push service, through the address the lookup gave.
      const local = new WebPushSender(loadVapidKeys(loadConfig({}).push.vapid, dataDir), { ...LOCAL, lookup });
      const reachable = service.subscribe(local.publicKey);
      const before = service.received.length;
      const named = new URL(reachable.endpoint);
      named.hostname = 'push.rebound.test';
      const outcome = await local.send(target({ ...reachable, endpoint: named.href }), MESSAGE, never);
      assert.equal(outcome.kind, 'final', 'the local service refuses VAPID for another origin, so the request did reach it');
      assert.match(service.refused.at(-1)?.reason ?? '', /aud/);
      assert.equal(service.received.length, before);
    } finally {
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    }
  });

  it('refuses a damaged generated key at start, naming the variable that would replace it', () => {
    const damaged = mkdtempSync(path.join(tmpdir(), 'trackstack-webpush-'));
    try {
      writeFileSync(path.join(damaged, 'vapid-private.pem'), 'not a key', { mode: 0o600 });
      assert.throws(
        () => loadVapidKeys(loadConfig({}).push.vapid, damaged),
        (error: unknown) => error instanceof ConfigError && error.message === `VAPID_PRIVATE_KEY: unset, and ${path.join(damaged, 'vapid-private.pem')} is not a P-256 private key`,
      );
    } finally {
      rmSync(damaged, { recursive: true, force: true });
    }
  });

  it('refuses VAPID keys that are not a pair at start, naming the variable in one line', () => {
    // generateVAPIDKeys pads the private key to 32 bytes; ECDH's getPrivateKey drops a leading zero byte.
    const one = webPush.generateVAPIDKeys();
    const other = webPush.generateVAPIDKeys();
    const config = loadConfig({ VAPID_PUBLIC_KEY: other.publicKey, VAPID_PRIVATE_KEY: one.privateKey }).push.vapid;
    assert.throws(
      () => loadVapidKeys(config, dataDir),
      (error: unknown) => error instanceof ConfigError && error.message === 'VAPID_PUBLIC_KEY: is not the public key of VAPID_PRIVATE_KEY',
    );
  });
});
