import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createServer } from '../../src/server.ts';
import type { Server } from '../../src/server.ts';
import { signIn } from '../support/api.ts';
import { createSharedDatabase, testEngines } from '../support/engines.ts';
import type { SharedTestDatabase } from '../support/engines.ts';
import { eventually } from '../support/eventually.ts';
import { scaledOutEnv } from '../support/server.ts';

const redisUrl = process.env.TEST_REDIS_URL;

for (const engine of testEngines()) {
  describe(`two instances sharing revocations through Redis [${engine.name}]`, { skip: redisUrl ? false : 'needs TEST_REDIS_URL' }, () => {
    let shared: SharedTestDatabase | undefined;
    let first: Server;
    let second: Server;

    before(async () => {
      shared = await createSharedDatabase(engine, 'trackstack-multi-');
      const env = scaledOutEnv(shared, redisUrl!);
      first = await createServer(loadConfig(env));
      second = await createServer(loadConfig(env));
    });
    after(async () => {
      await first?.close();
      await second?.close();
      await shared?.dispose();
    });

    it('a session revoked on one instance is refused by the other', async () => {
      const { token, sessionId, authorization: headers } = await signIn(first, `multi-${Date.now()}@example.com`);
      // Both instances share DATA_DIR, hence the signing key: a token from one passes on the other.
      assert.ok(await second.auth!.api.verifier.verify(token));
      const before = await second.app.inject({ url: '/api/devices/', headers });
      assert.equal(before.statusCode, 200);

      await first.auth!.api.sessions.revoke(sessionId);
      assert.equal(await first.auth!.api.verifier.verify(token), null, 'the revoking instance refuses at once');
      await eventually(async () => (await second.auth!.api.verifier.verify(token)) === null, 'the other instance refuses it');
      const afterRevocation = await second.app.inject({ url: '/api/devices/', headers });
      assert.equal(afterRevocation.statusCode, 401);
    });

    it('a process started after the revocation refuses the token too', async () => {
      const { token, sessionId } = await signIn(first, `late-${Date.now()}@example.com`);
      await first.auth!.api.sessions.revoke(sessionId);
      const third = await createServer(second.config);
      try {
        assert.equal(await third.auth!.api.verifier.verify(token), null);
      } finally {
        await third.close();
      }
    });
  });
}
