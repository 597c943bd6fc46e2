import assert from 'node:assert/strict';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { SignJWT } from 'jose';
import { ConfigError, loadConfig } from '../../../../src/config.ts';
import { createFcmSender } from '../../../../src/services/notifications/push/fcm.ts';
import type { FcmSender } from '../../../../src/services/notifications/push/fcm.ts';
import type { PushMessage, PushTarget } from '../../../../src/services/notifications/push/push-sender.ts';
import { freePort } from '../../../support/ports.ts';
import { startFcmService, testClock } from '../../../support/push-providers.ts';
import type { FcmService, TestClock } from '../../../support/push-providers.ts';

const MESSAGE: PushMessage = {
  title: 'Van ignition on',
  body: 'Van 3 ignition turned on at 03:04',
  url: '/devices/3/events/99',
  data: { eventId: '99', deviceId: '3', type: 'ignitionOn' },
  collapseKey: 'rule-1:device-3:ignitionOn',
};
const never = new AbortController().signal;
let tokenCounter = 0;
const newTarget = (): PushTarget => ({ id: `t${++tokenCounter}`, kind: 'fcm', token: `fcm-device-token:${'A'.repeat(20)}${tokenCounter}` });

function senderFor(service: FcmService, clock: TestClock): FcmSender {
  const sender = createFcmSender(loadConfig({ FCM_SERVICE_ACCOUNT: service.serviceAccount, FCM_URL: service.origin }).push.fcm, { now: clock.now });
  assert.ok(sender);
  return sender;
}

describe('FCM sender', () => {
  let service: FcmService;
  let clock: TestClock;
  let sender: FcmSender;

  before(async () => {
    clock = testClock();
    service = await startFcmService({ clock });
    sender = senderFor(service, clock);
  });
  after(() => service.close());

  it('is not offered without FCM_SERVICE_ACCOUNT', () => {
    assert.equal(createFcmSender(loadConfig({}).push.fcm), undefined);
  });

  it('sends the notification, data and collapse key with a bearer from the service account', async () => {
    const target = newTarget();
    assert.deepEqual(await sender.send(target, MESSAGE, never), { kind: 'sent' });
    assert.deepEqual(service.refusedAssertions, []);
    assert.deepEqual(service.received.at(-1), {
      token: target.token,
      message: {
        token: target.token,
        notification: { title: MESSAGE.title, body: MESSAGE.body },
        data: { ...MESSAGE.data, url: MESSAGE.url },
        android: { priority: 'high', collapse_key: MESSAGE.collapseKey },
      },
    });
  });

  it('fetches one access token for concurrent sends and reuses it until shortly before it expires', async () => {
    const fresh = testClock();
    const own = await startFcmService({ clock: fresh });
    try {
      const ownSender = senderFor(own, fresh);
      const outcomes = await Promise.all(Array.from({ length: 5 }, () => ownSender.send(newTarget(), MESSAGE, never)));
      assert.deepEqual(outcomes, Array.from({ length: 5 }, () => ({ kind: 'sent' })));
      assert.equal(own.accessTokensIssued, 1);
      fresh.advance(50 * 60_000);
      assert.deepEqual(await ownSender.send(newTarget(), MESSAGE, never), { kind: 'sent' });
      assert.equal(own.accessTokensIssued, 1);
      fresh.advance(6 * 60_000); // 56 min: within five minutes of the hour the token lives
      assert.deepEqual(await ownSender.send(newTarget(), MESSAGE, never), { kind: 'sent' });
      assert.equal(own.accessTokensIssued, 2);
      assert.equal(own.received.length, 7);
    } finally {
      await own.close();
    }
  });

  it('refreshes a refused access token once (401) and sends', async () => {
    const issued = service.accessTokensIssued;
    service.revokeAccessTokens();
    assert.deepEqual(await sender.send(newTarget(), MESSAGE, never), { kind: 'sent' });
    assert.equal(service.accessTokensIssued, issued + 1);
    service.failNext(401, { error: { code: 401, status: 'UNAUTHENTICATED', message: 'bad' } });
    service.failNext(401, { error: { code: 401, status: 'UNAUTHENTICATED', message: 'still bad' } });
    assert.deepEqual(await sender.send(newTarget(), MESSAGE, never), { kind: 'final', error: 'FCM answered 401: UNAUTHENTICATED: still bad' });
  });

  it('reports an unregistered token and a token FCM calls invalid as gone', async () => {
    const target = newTarget();
    service.unregister(target.token as string);
    assert.deepEqual(await sender.send(target, MESSAGE, never), { kind: 'gone', error: 'FCM answered 404: UNREGISTERED: Requested entity was not found.' });
    const invalid = await sender.send({ id: 'bad', kind: 'fcm', token: 'short' }, MESSAGE, never);
    assert.equal(invalid.kind, 'gone');
  });

  it('retries on 5xx and 429 with Retry-After, and gives up on another 4xx', async () => {
    service.failNext(503, { error: { code: 503, status: 'UNAVAILABLE', message: 'The service is currently unavailable.' } }, { 'retry-after': '30' });
    assert.deepEqual(await sender.send(newTarget(), MESSAGE, never), {
      kind: 'retry',
      error: 'FCM answered 503: UNAVAILABLE: The service is currently unavailable.',
      retryAfterMs: 30_000,
    });
    service.failNext(429, { error: { code: 429, status: 'RESOURCE_EXHAUSTED', details: [{ errorCode: 'QUOTA_EXCEEDED' }] } }, { 'retry-after': '7' });
    assert.deepEqual(await sender.send(newTarget(), MESSAGE, never), { kind: 'retry', error: 'FCM answered 429: QUOTA_EXCEEDED', retryAfterMs: 7000 });
    service.failNext(400, { error: { code: 400, status: 'INVALID_ARGUMENT', message: 'Message is too big' } });
    assert.deepEqual(await sender.send(newTarget(), MESSAGE, never), { kind: 'final', error: 'FCM answered 400: INVALID_ARGUMENT: Message is too big' });
  });

  it('sends to the configured project only: another project is refused by FCM', async () => {
    const other = JSON.parse(service.serviceAccount) as Record<string, string>;
    const wrongProject = createFcmSender({ serviceAccount: JSON.stringify({ ...other, project_id: 'someone-else' }), url: service.origin }, { now: clock.now });
    assert.ok(wrongProject);
    assert.deepEqual(await wrongProject.send(newTarget(), MESSAGE, never), { kind: 'final', error: 'FCM answered 403: PERMISSION_DENIED: The caller does not have permission' });
  });

  it('gets no access token with a key Google does not know, and says why', async () => {
    const account = JSON.parse(service.serviceAccount) as Record<string, string>;
    const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const impostor = createFcmSender({ serviceAccount: JSON.stringify({ ...account, private_key: stranger }), url: service.origin });
    assert.ok(impostor);
    const before = service.received.length;
    const outcome = await impostor.send(newTarget(), MESSAGE, never);
    assert.equal(outcome.kind, 'final');
    assert.match(outcome.kind === 'final' ? outcome.error : '', /^FCM token endpoint answered 400: invalid_grant: signature verification failed/);
    assert.match(service.refusedAssertions.at(-1) ?? '', /signature/);
    assert.equal(service.received.length, before);
  });

  it('retries while the token endpoint is unreachable', async () => {
    const account = JSON.parse(service.serviceAccount) as Record<string, string>;
    const unreachable = createFcmSender({ serviceAccount: JSON.stringify({ ...account, token_uri: `http://127.0.0.1:${await freePort()}/token` }), url: service.origin });
    assert.ok(unreachable);
    const outcome = await unreachable.send(newTarget(), MESSAGE, never);
    assert.equal(outcome.kind, 'retry');
    assert.match(outcome.kind === 'retry' ? outcome.error : '', /^FCM token endpoint unreachable: ECONNREFUSED/);
  });

  it('the local token endpoint refuses the assertions Google refuses', async () => {
    const account = JSON.parse(service.serviceAccount) as { private_key: string; client_email: string; token_uri: string };
    const key = createPrivateKey(account.private_key);
    const now = Math.floor(clock.now() / 1000);
    const assertion = (claims: Record<string, unknown>, lifetime = 3600) =>
      new SignJWT({
        scope: 'https://www.googleapis.com/auth/firebase.messaging',
        iss: account.client_email,
        aud: account.token_uri,
        iat: now,
        exp: now + lifetime,
        ...claims,
      })
        .setProtectedHeader({ alg: 'RS256' })
        .sign(key);
    const cases: [Promise<string>, RegExp][] = [
      [assertion({ scope: 'https://www.googleapis.com/auth/cloud-platform' }), /scope/],
      [assertion({ aud: 'https://oauth2.googleapis.com/token' }), /aud/],
      [assertion({ iss: 'someone@else.iam.gserviceaccount.com' }), /iss/],
      [assertion({}, 7200), /longer than 1 h/],
      [assertion({}, -60), /exp/],
    ];
    for (const [pending, problem] of cases) {
      const response = await fetch(account.token_uri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: await pending }).toString(),
      });
      assert.equal(response.status, 400, String(problem));
      assert.match(service.refusedAssertions.at(-1) ?? '', problem);
    }
  });

  it('refuses a bad service account at start, naming the variable in one line', () => {
    const account = JSON.parse(service.serviceAccount) as Record<string, string>;
    const ecKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const cases: [string, string][] = [
      ['{not json', 'FCM_SERVICE_ACCOUNT: not valid JSON'],
      [JSON.stringify({ ...account, project_id: undefined }), 'FCM_SERVICE_ACCOUNT: missing project_id'],
      [JSON.stringify({ ...account, client_email: '' }), 'FCM_SERVICE_ACCOUNT: missing client_email'],
      [JSON.stringify({ ...account, private_key: 'garbage' }), 'FCM_SERVICE_ACCOUNT: private_key is not a readable private key'],
      [JSON.stringify({ ...account, private_key: ecKey }), 'FCM_SERVICE_ACCOUNT: private_key must be an RSA key'],
      [JSON.stringify({ ...account, token_uri: 'http://oauth.example.com/token' }), "FCM_SERVICE_ACCOUNT: token_uri must be https (http only for localhost), got 'http://oauth.example.com/token'"],
    ];
    for (const [serviceAccount, message] of cases) {
      assert.throws(
        () => createFcmSender({ serviceAccount, url: service.origin }),
        (error: unknown) => error instanceof ConfigError && error.message === message && !error.message.includes('\n'),
        message,
      );
    }
  });
});
