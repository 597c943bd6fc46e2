import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { AccessTokenIssuer, AccessTokenVerifier } from '../../../src/services/auth/tokens/access-tokens.ts';
import { RevocationList } from '../../../src/services/auth/tokens/revocations.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';

describeEachEngine('token core', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine);
  });
  after(() => server.dispose());

  it('publishes the Ed25519 key as a JWKS', async () => {
    const response = await server.app.inject({ method: 'GET', url: '/api/auth/.well-known/jwks.json' });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['cache-control'], 'public, max-age=300', 'verifiers may cache the public key');
    const [key] = response.json().keys;
    assert.equal(key.kty, 'OKP');
    assert.equal(key.crv, 'Ed25519');
    assert.equal(key.alg, 'EdDSA');
    assert.equal(typeof key.kid, 'string');
    assert.equal(key.d, undefined, 'the private part is never published');
  });

  it('issues access tokens that verify against the JWKS and carry the documented claims', async () => {
    const login = await server.login({ email: 'Claims@Example.com' });
    const jwks = createLocalJWKSet((await server.app.inject({ url: '/api/auth/.well-known/jwks.json' })).json());
    const { payload, protectedHeader } = await jwtVerify(login.token, jwks, { issuer: server.config.publicUrl });
    assert.equal(protectedHeader.alg, 'EdDSA');
    assert.equal(protectedHeader.typ, 'at+jwt');
    assert.equal(payload.sub, String(login.userId));
    assert.equal(payload.userId, login.userId);
    assert.equal(payload.email, 'claims@example.com');
    assert.equal(payload.sid, login.sessionId);
    assert.equal(typeof payload.jti, 'string');
    assert.equal((payload.exp as number) - (payload.iat as number), server.config.ttl.accessToken);
    assert.equal(decodeProtectedHeader(login.token).typ, 'at+jwt');
  });

  it('refuses a revoked session at once and keeps the others', async () => {
    const auth = server.auth!.api;
    const first = await server.login({ email: 'revoke-one@example.com' });
    const second = await server.login({ email: 'revoke-one@example.com' });
    assert.ok(await auth.verifier.verify(first.token));
    await auth.sessions.revoke(first.sessionId);
    assert.equal(await auth.verifier.verify(first.token), null);
    assert.ok(await auth.verifier.verify(second.token));
    assert.equal(await auth.sessions.isActive(first.sessionId), false);
    assert.equal(await auth.sessions.isActive(second.sessionId), true);
  });

  it('answers a token verified before without a promise, and a revocation or expiry still wins at once', async () => {
    const auth = server.auth!.api;
    const login = await server.login({ email: 'cached-verify@example.com' });
    const fresh = await server.login({ email: 'cached-verify@example.com' });
    assert.equal(auth.verifier.verifyCached(fresh.token), undefined, 'a token never verified needs its signature checked');
    assert.deepEqual(await auth.verifier.verify(login.token), auth.verifier.verifyCached(login.token));
    assert.equal(auth.verifier.verifyCached(login.token)?.sessionId, login.sessionId);
    await auth.sessions.revoke(login.sessionId);
    assert.equal(auth.verifier.verifyCached(login.token), null);

    // The verifier's clock is moved, not waited for.
    let now = Date.now();
    const verifier = new AccessTokenVerifier(auth.signingKey.publicKey, server.config.publicUrl, new RevocationList(), () => now);
    const shortLived = new AccessTokenIssuer(auth.signingKey.privateKey, server.config.publicUrl, 60, () => now);
    const token = await shortLived.issue({ userId: login.userId, email: 'cached-verify@example.com', sessionId: 'short-lived' });
    assert.ok(await verifier.verify(token));
    now += 59_000;
    assert.ok(verifier.verifyCached(token), 'still valid a second before its exp');
    now += 1_000;
    assert.equal(verifier.verifyCached(token), null, 'expired');
    assert.equal(verifier.verifyCached(token), undefined, 'an expired token leaves the cache');
  });

  it('revokes every session of a user, optionally sparing one', async () => {
    const auth = server.auth!.api;
    const kept = await server.login({ email: 'revoke-all@example.com' });
    const others = [await server.login({ email: 'revoke-all@example.com' }), await server.login({ email: 'revoke-all@example.com' })];
    const bystander = await server.login({ email: 'bystander@example.com' });
    await auth.sessions.revokeAllOfUser(kept.userId, { except: kept.sessionId });
    for (const other of others) assert.equal(await auth.verifier.verify(other.token), null);
    assert.ok(await auth.verifier.verify(kept.token));
    assert.ok(await auth.verifier.verify(bystander.token));
    await auth.sessions.revokeAllOfUser(kept.userId);
    assert.equal(await auth.verifier.verify(kept.token), null);
  });

  it('lists revocations still relevant, so a new process starts knowing them', async () => {
    const login = await server.login({ email: 'listed@example.com' });
    await server.auth!.api.sessions.revoke(login.sessionId);
    const listed = await server.auth!.api.sessions.stillRelevantRevocations();
    const entry = listed.find((session) => session.id === login.sessionId);
    assert.ok(entry);
    assert.ok(entry.until > Date.now());
  });

  it('never accepts a token of another type, issuer or key', async () => {
    const auth = server.auth!.api;
    const login = await server.login({ email: 'types@example.com' });
    const [header, payload] = login.token.split('.');
    assert.equal(await auth.verifier.verify(`${header}.${payload}.AAAA`), null, 'bad signature');
    assert.equal(await auth.verifier.verify('not-a-jwt'), null);
    const { SignJWT } = await import('jose');
    const plain = await new SignJWT({ userId: login.userId, email: 'types@example.com', sid: login.sessionId })
      .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT' })
      .setIssuer(server.config.publicUrl)
      .setExpirationTime('1h')
      .sign(auth.signingKey.privateKey);
    assert.equal(await auth.verifier.verify(plain), null, 'typ other than at+jwt');
    const foreignIssuer = await new SignJWT({ userId: login.userId, email: 'types@example.com', sid: login.sessionId })
      .setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt' })
      .setIssuer('https://elsewhere.example')
      .setExpirationTime('1h')
      .sign(auth.signingKey.privateKey);
    assert.equal(await auth.verifier.verify(foreignIssuer), null, 'foreign issuer');
  });
});
