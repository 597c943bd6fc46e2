import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LegalDocuments } from '../../../src/services/auth/legal/documents.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { assertError, signIn } from '../../support/api.ts';
import { cookie, createUser, login, PASSWORD, postJson, storedUser } from './support/auth.ts';

describeEachEngine('auth profile, account deletion and legal documents', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off' });
  });
  after(() => server.dispose());

  const getProfile = (bearer: { authorization: string }) => server.app.inject({ url: '/api/auth/profile', headers: bearer });
  const putProfile = (bearer: { authorization: string }, payload: unknown) =>
    server.app.inject({ method: 'PUT', url: '/api/auth/profile', headers: bearer, payload: payload as object });

  it('cookies are not Secure when PUBLIC_URL is plain http', async () => {
    await createUser(server, { email: 'plain-http@example.com' });
    const response = await login(server, 'plain-http@example.com');
    assert.equal(cookie(response, 'access_token')?.secure, undefined);
    assert.equal(cookie(response, 'refresh_token')?.secure, undefined);
  });

  it('GET /profile needs a token', async () => {
    assertError(await server.app.inject({ url: '/api/auth/profile' }), 401, 'UNAUTHORIZED');
    assertError(await server.app.inject({ url: '/api/auth/profile', headers: { authorization: 'Bearer nonsense' } }), 401, 'INVALID_TOKEN');
  });

  it('PUT /profile updates name, phone, time zone and language; absent fields stay, null clears', async () => {
    await createUser(server, { email: 'profile@example.com', name: 'Before' });
    const session = await signIn(server, 'profile@example.com', { password: PASSWORD });
    const updated = await putProfile(session.authorization, { name: 'After', phone: '+49 30 1234567', timezone: 'Europe/Berlin', language: 'pt-br' });
    assert.equal(updated.statusCode, 200, updated.body);
    const user = updated.json();
    assert.equal(user.name, 'After');
    assert.equal(user.phone, '+49 30 1234567');
    assert.equal(user.attributes.timezone, 'Europe/Berlin');
    assert.equal(user.attributes.language, 'pt-BR', 'stored canonical');
    assert.deepEqual((await getProfile(session.authorization)).json(), user);

    const partial = (await putProfile(session.authorization, { phone: null, language: null })).json();
    assert.equal(partial.name, 'After');
    assert.equal(partial.phone, null);
    assert.equal(partial.attributes.timezone, 'Europe/Berlin');
    assert.equal('language' in partial.attributes, false);

    const units = (await putProfile(session.authorization, { speedUnit: 'mph', distanceUnit: 'mi' })).json();
    assert.deepEqual([units.attributes.speedUnit, units.attributes.distanceUnit, units.attributes.timezone], ['mph', 'mi', 'Europe/Berlin']);
    const cleared = (await putProfile(session.authorization, { speedUnit: null })).json();
    assert.equal('speedUnit' in cleared.attributes, false);
    assert.equal((await getProfile(session.authorization)).json().attributes.distanceUnit, 'mi');
  });

  it('PUT /profile refuses bad input with 400 and read-only accounts with 403, changing nothing', async () => {
    const id = await createUser(server, { email: 'profile-bad@example.com', name: 'Kept' });
    const session = await signIn(server, 'profile-bad@example.com', { password: PASSWORD });
    const cases: [unknown, string | undefined][] = [
      [{ timezone: 'Mars/Olympus' }, '/body/timezone'],
      [{ language: 'not a language!' }, '/body/language'],
      [{ name: 'x'.repeat(256) }, undefined],
      [{ phone: 'call me maybe' }, undefined],
      [{ name: 5 }, undefined],
      [{ timezone: '' }, undefined],
      [{ speedUnit: 'furlongs per fortnight' }, undefined],
      [{ distanceUnit: 'nmi' }, undefined],
      [{ email: 'new@example.com' }, undefined],
      [{ administrator: true }, undefined],
    ];
    for (const [payload, detailPath] of cases) {
      const response = await putProfile(session.authorization, payload);
      assertError(response, 400, 'VALIDATION_FAILED');
      if (detailPath) assert.equal(response.json().details[0].path, detailPath);
    }
    await server.database!.db.updateTable('users').set({ readonly: 1 }).where('id', '=', id).execute();
    assertError(await putProfile(session.authorization, { name: 'Changed' }), 403, 'ACCOUNT_READONLY');
    const stored = await storedUser(server, 'profile-bad@example.com');
    assert.equal(stored?.name, 'Kept');
    assert.equal(stored?.administrator, false);
    assert.deepEqual((await getProfile(session.authorization)).json().attributes, { emailVerified: true, twoFactorEnabled: false });
  });

  it('DELETE /account answers 204, ends every session, removes the account and tells the other modules', async () => {
    const deleted: number[] = [];
    server.bus.on('auth.user.deleted', ({ userId }) => {
      deleted.push(userId);
    });
    const id = await createUser(server, { email: 'leaving@example.com' });
    await createUser(server, { email: 'staying@example.com' });
    const one = await signIn(server, 'leaving@example.com', { password: PASSWORD });
    const two = await signIn(server, 'leaving@example.com', { password: PASSWORD });
    const bystander = await signIn(server, 'staying@example.com', { password: PASSWORD });
    await server.app.inject({ method: 'POST', url: '/api/auth/2fa/setup', headers: one.authorization });

    const response = await server.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: one.authorization });
    assert.equal(response.statusCode, 204);
    assert.equal(cookie(response, 'access_token')?.value, '');
    assert.deepEqual(deleted, [id]);
    assert.equal(await storedUser(server, 'leaving@example.com'), undefined);
    for (const session of [one, two]) {
      assertError(await getProfile(session.authorization), 401, 'INVALID_TOKEN');
      assertError(await postJson(server, '/api/auth/refresh', { refreshToken: session.refreshToken }), 401, 'INVALID_TOKEN');
    }
    assertError(await login(server, 'leaving@example.com'), 401, 'INVALID_CREDENTIALS');
    const leftovers = await server.database!.db.selectFrom('two_factor').select('user_id').where('user_id', '=', id).execute();
    assert.equal(leftovers.length, 0);
    assert.equal((await getProfile(bystander.authorization)).statusCode, 200);
    assertError(await server.app.inject({ method: 'DELETE', url: '/api/auth/account' }), 401, 'UNAUTHORIZED');
  });

  it('DELETE /account refuses the last administrator with 409 and keeps the account; with another one it goes', async () => {
    const id = await createUser(server, { email: 'only-admin@example.com', administrator: true });
    const disabledAdmin = await createUser(server, { email: 'disabled-admin@example.com', administrator: true });
    await server.database!.db.updateTable('users').set({ disabled: 1 }).where('id', '=', disabledAdmin).execute();
    const expiredAdmin = await createUser(server, { email: 'expired-admin@example.com', administrator: true });
    await server.database!.db.updateTable('users').set({ expiration_time: Date.now() - 1000 }).where('id', '=', expiredAdmin).execute();
    const session = await signIn(server, 'only-admin@example.com', { password: PASSWORD });
    const deleteOwn = () => server.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: session.authorization });

    assertError(await deleteOwn(), 409, 'LAST_ADMINISTRATOR');
    assert.equal((await storedUser(server, 'only-admin@example.com'))?.id, id);
    assert.equal((await getProfile(session.authorization)).statusCode, 200, 'still signed in');
    assert.equal((await postJson(server, '/api/auth/refresh', { refreshToken: session.refreshToken })).statusCode, 200);

    await createUser(server, { email: 'second-admin@example.com', administrator: true });
    assert.equal((await deleteOwn()).statusCode, 204);
    assert.equal(await storedUser(server, 'only-admin@example.com'), undefined);
  });

  it('serves the terms and the privacy policy publicly, and records their acceptance', async () => {
    const terms = await server.app.inject({ url: '/api/legal/terms' });
    const privacy = await server.app.inject({ url: '/api/legal/privacy' });
    assert.equal(terms.statusCode, 200);
    assert.deepEqual(Object.keys(terms.json()).sort(), ['content', 'type', 'version']);
    assert.equal(terms.json().type, 'terms');
    assert.equal(privacy.json().type, 'privacy');
    assert.equal(terms.json().version, '2025-01-01');
    assert.match(terms.json().content, /Terms of Service/);
    assert.ok(terms.json().content.startsWith('# Terms of Service'), 'front matter is not content');

    await server.auth!.api.accounts.create({ email: 'social-terms@example.com', password: 'Sturdy-Lantern-42', emailVerified: true });
    const session = await signIn(server, 'social-terms@example.com', { password: PASSWORD });
    assert.equal((await getProfile(session.authorization)).json().attributes.termsAcceptedVersion, undefined, 'not yet accepted');
    const accept = (version: unknown) => server.app.inject({ method: 'POST', url: '/api/legal/accept', headers: session.authorization, payload: { version } as object });
    assertError(await accept('1999-01-01'), 400, 'TERMS_VERSION_OUTDATED');
    assertError(await accept(5), 400, 'VALIDATION_FAILED');
    assertError(await accept('x'.repeat(65)), 400, 'VALIDATION_FAILED');
    assert.equal((await getProfile(session.authorization)).json().attributes.termsAcceptedVersion, undefined, 'refusals changed nothing');
    const accepted = await accept(terms.json().version);
    assert.equal(accepted.statusCode, 200, accepted.body);
    assert.equal(accepted.json().attributes.termsAcceptedVersion, '2025-01-01');
    assert.equal(accepted.json().attributes.privacyAcceptedVersion, privacy.json().version);
    assert.ok(!Number.isNaN(Date.parse(accepted.json().attributes.termsAcceptedAt)));
    assertError(await server.app.inject({ method: 'POST', url: '/api/legal/accept', payload: { version: '2025-01-01' } }), 401, 'UNAUTHORIZED');
  });
});

describe('legal documents', () => {
  it('prefer the operator files in DATA_DIR/legal, versioned by front matter or by their text', () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-legal-'));
    try {
      mkdirSync(path.join(dataDir, 'legal'));
      writeFileSync(path.join(dataDir, 'legal', 'terms.md'), '---\nversion: 7\n---\n# Our terms\n');
      writeFileSync(path.join(dataDir, 'legal', 'privacy.md'), '# Our privacy policy\n');
      const documents = new LegalDocuments(dataDir);
      assert.deepEqual(documents.get('terms'), { type: 'terms', version: '7', content: '# Our terms\n' });
      const privacy = documents.get('privacy');
      assert.equal(privacy.content, '# Our privacy policy\n');
      assert.match(privacy.version, /^[\w-]{12}$/);
      writeFileSync(path.join(dataDir, 'legal', 'privacy.md'), '# Our privacy policy, edited\n');
      assert.notEqual(new LegalDocuments(dataDir).get('privacy').version, privacy.version, 'an edit is a new version');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
