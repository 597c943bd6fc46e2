import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { loadConfig } from '../../../src/config.ts';
import { createPushSenders } from '../../../src/services/notifications/push/senders.ts';
import type { PushSenders } from '../../../src/services/notifications/push/senders.ts';
import { assertError } from '../../support/api.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';

describeEachEngine('the Web Push key for browsers', (engine) => {
  let dataDir: string;
  let senders: PushSenders;
  let withPush: TestServer;
  let withoutPush: TestServer;

  before(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-webpush-key-'));
    senders = createPushSenders(loadConfig({ DATA_DIR: dataDir }));
    withPush = await startTestServer(engine, {}, { pushSenders: senders.byKind });
    withoutPush = await startTestServer(engine, {}, { pushSenders: new Map() });
  });
  after(async () => {
    await withPush.dispose();
    await withoutPush.dispose();
    await senders.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers the VAPID public key the senders sign with, to a signed-in user', async () => {
    const user = await withPush.login({ email: 'push-key@example.com' });
    const answer = await withPush.app.inject({ method: 'GET', url: '/api/notifications/targets/webpush-key', headers: user.authorization });
    assert.equal(answer.statusCode, 200, answer.body);
    assert.deepEqual(answer.json(), { publicKey: senders.vapidPublicKey });
    assert.equal(Buffer.from(senders.vapidPublicKey, 'base64url').length, 65, 'an uncompressed P-256 point');
  });

  it('refuses anonymous callers, and says so when the server has no Web Push sender', async () => {
    assertError(await withPush.app.inject({ method: 'GET', url: '/api/notifications/targets/webpush-key' }), 401, 'UNAUTHORIZED');
    const user = await withoutPush.login({ email: 'push-key@example.com' });
    assertError(await withoutPush.app.inject({ method: 'GET', url: '/api/notifications/targets/webpush-key', headers: user.authorization }), 400, 'CHANNEL_NOT_AVAILABLE');
  });
});
