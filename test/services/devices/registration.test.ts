import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { signIn } from '../../support/api.ts';
import { Client, snapshot, uniqueId } from './helpers.ts';

describeEachEngine('DEVICE_REGISTRATION', (engine) => {
  for (const mode of ['open', 'claim-only'] as const) {
    describe(mode, () => {
      let server: TestServer;
      let admin: Client;
      let user: Client;

      before(async () => {
        server = await startTestServer(engine, { RATE_LIMITS: 'off', DEVICE_REGISTRATION: mode });
        admin = new Client(server, await signIn(server, 'registration-admin@example.com', { administrator: true }));
        user = new Client(server, await signIn(server, 'registration-user@example.com'));
      });
      after(() => server.dispose());

      const provision = async () => (await admin.post('/api/devices/claim-tokens', { uniqueId: uniqueId('reg'), modelCode: 'PT-1' })).body as { token: string; uniqueId: string };

      if (mode === 'open') {
        it('lets any user register a free uniqueId without a token', async () => {
          const created = await user.post('/api/devices', { name: 'Mine', uniqueId: uniqueId('reg') });
          assert.equal(created.status, 201);
          assert.equal((await user.get(`/api/devices/${created.body.id}`)).body.isOwner, true);
        });
      } else {
        it('refuses a user registering a device without a claim token with 403, changing nothing', async () => {
          const before = await snapshot(server);
          const refused = await user.post('/api/devices', { name: 'Squatted', uniqueId: uniqueId('reg') });
          assert.equal(refused.status, 403);
          assert.equal(refused.body.code, 'DEVICE_REGISTRATION_CLAIM_ONLY');
          assert.deepEqual(await snapshot(server), before);
        });

        it('answers a bad deviceToken with the claim-token errors, changing nothing', async () => {
          const token = await provision();
          const before = await snapshot(server);
          const unknown = await user.post('/api/devices', { name: 'x', uniqueId: token.uniqueId, deviceToken: 'AAAA-BBBB-CCCC' });
          assert.equal(unknown.status, 404);
          assert.equal(unknown.body.code, 'CLAIM_TOKEN_NOT_FOUND');
          const mismatch = await user.post('/api/devices', { name: 'x', uniqueId: uniqueId('reg'), deviceToken: token.token });
          assert.equal(mismatch.status, 400);
          assert.equal(mismatch.body.code, 'CLAIM_TOKEN_MISMATCH');
          assert.deepEqual(await snapshot(server), before);
        });
      }

      it('lets a user add a device with its claim token, by create or by claim', async () => {
        const viaCreate = await provision();
        const created = await user.post('/api/devices', { name: 'Pet', uniqueId: viaCreate.uniqueId, deviceToken: viaCreate.token });
        assert.equal(created.status, 201);
        assert.equal(created.body.claimToken, viaCreate.token);
        const viaClaim = await provision();
        const claimed = await user.post('/api/devices/claim', { token: viaClaim.token });
        assert.equal(claimed.status, 200);
        assert.equal(claimed.body.device.uniqueId, viaClaim.uniqueId);
      });

      it('lets administrators register devices without a token (stock)', async () => {
        const created = await admin.post('/api/devices', { name: 'Stock', uniqueId: uniqueId('reg-stock') });
        assert.equal(created.status, 201);
      });
    });
  }
});
