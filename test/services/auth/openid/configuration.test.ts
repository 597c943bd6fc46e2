import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../../../src/config.ts';
import { appleName } from '../../../../src/services/auth/openid/providers/apple.ts';
import { configureProviders } from '../../../../src/services/auth/openid/providers/registry.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestServer } from '../../../support/server.ts';
import { assertError } from '../../../support/api.ts';

function refusal(env: Record<string, string>, build = false): ConfigError {
  try {
    const config = loadConfig(env);
    if (build) configureProviders(config.oidc, config.publicUrl);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error;
  }
  assert.fail(`expected ${JSON.stringify(env)} to be refused`);
}

const p256 = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

describe('social login configuration', () => {
  it('provider URLs must be https; plain http only to this machine', () => {
    for (const variable of ['OIDC_GOOGLE_ISSUER', 'OIDC_APPLE_ISSUER', 'OIDC_FACEBOOK_AUTH_URL', 'OIDC_FACEBOOK_TOKEN_URL', 'OIDC_FACEBOOK_USERINFO_URL']) {
      const error = refusal({ [variable]: 'http://idp.example.com/' });
      assert.equal(error.variable, variable);
      assert.match(error.message, /https/);
      for (const local of ['http://localhost:9000', 'http://127.0.0.1:9000', 'http://[::1]:9000', 'https://idp.example.com']) {
        assert.doesNotThrow(() => loadConfig({ [variable]: local }), `${variable}=${local}`);
      }
    }
    assert.equal(refusal({ OIDC_GOOGLE_ISSUER: 'http://127.0.0.1.example.com' }).variable, 'OIDC_GOOGLE_ISSUER');
  });

  it('enables each provider only when it is fully configured, and says what is missing', () => {
    const none = configureProviders(loadConfig({}).oidc, 'https://api.example.com');
    assert.equal(none.redirect.size, 0);
    assert.equal(none.googleIdTokens, undefined);

    const mobileOnly = configureProviders(loadConfig({ OIDC_GOOGLE_AUDIENCES: 'ios' }).oidc, 'https://api.example.com');
    assert.equal(mobileOnly.redirect.has('google'), false, 'the web flow needs the client secret');
    assert.ok(mobileOnly.googleIdTokens);

    const all = configureProviders(
      loadConfig({
        OIDC_GOOGLE_CLIENT_ID: 'g',
        OIDC_GOOGLE_CLIENT_SECRET: 'gs',
        OIDC_FACEBOOK_CLIENT_ID: 'f',
        OIDC_FACEBOOK_CLIENT_SECRET: 'fs',
        OIDC_APPLE_CLIENT_ID: 'a',
        OIDC_APPLE_TEAM_ID: 't',
        OIDC_APPLE_KEY_ID: 'k',
        OIDC_APPLE_PRIVATE_KEY: p256(),
      }).oidc,
      'https://api.example.com',
    );
    assert.deepEqual([...all.redirect.keys()].sort(), ['apple', 'facebook', 'google']);
    assert.ok(all.googleIdTokens, 'the client id is the default audience');

    assert.equal(refusal({ OIDC_GOOGLE_CLIENT_SECRET: 'gs' }, true).variable, 'OIDC_GOOGLE_CLIENT_ID');
    assert.equal(refusal({ OIDC_FACEBOOK_CLIENT_ID: 'f' }, true).variable, 'OIDC_FACEBOOK_CLIENT_SECRET');
    assert.equal(refusal({ OIDC_FACEBOOK_CLIENT_SECRET: 'fs' }, true).variable, 'OIDC_FACEBOOK_CLIENT_ID');
    assert.equal(refusal({ OIDC_APPLE_CLIENT_ID: 'a', OIDC_APPLE_TEAM_ID: 't', OIDC_APPLE_PRIVATE_KEY: p256() }, true).variable, 'OIDC_APPLE_KEY_ID');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const wrongKey = refusal({ OIDC_APPLE_CLIENT_ID: 'a', OIDC_APPLE_TEAM_ID: 't', OIDC_APPLE_KEY_ID: 'k', OIDC_APPLE_PRIVATE_KEY: rsa }, true);
    assert.equal(wrongKey.variable, 'OIDC_APPLE_PRIVATE_KEY');
    assert.match(wrongKey.message, /P-256/);
  });

  it("reads Apple's name from the first authorization's user field, ignoring anything else", () => {
    assert.equal(appleName(JSON.stringify({ name: { firstName: ' Jane ', lastName: 'Appleseed' } })), 'Jane Appleseed');
    assert.equal(appleName(JSON.stringify({ name: { firstName: 'Solo' } })), 'Solo');
    for (const user of [null, '', 'not json', 'null', '[]', JSON.stringify({ name: { firstName: 42 } }), JSON.stringify({ email: 'a@b.c' })]) {
      assert.equal(appleName(user), undefined, String(user));
    }
    assert.equal(appleName(JSON.stringify({ name: { firstName: 'x'.repeat(300) } }))?.length, 255);
  });
});

describeEachEngine('social login: starting sign-ins is rate limited', (engine) => {
  let server: TestServer;
  before(async () => {
    // The login dialog URL is built locally; nothing is fetched from these endpoints.
    server = await startTestServer(engine, {
      OIDC_FACEBOOK_CLIENT_ID: 'fb',
      OIDC_FACEBOOK_CLIENT_SECRET: 'fb-secret',
      OIDC_FACEBOOK_AUTH_URL: 'http://127.0.0.1:9/dialog/oauth',
      OIDC_FACEBOOK_TOKEN_URL: 'http://127.0.0.1:9/oauth/access_token',
      OIDC_FACEBOOK_USERINFO_URL: 'http://127.0.0.1:9/me',
    });
  });
  after(() => server.dispose());

  it('30 a minute per client IP, then 429 RATE_LIMITED', async () => {
    const start = (remoteAddress: string) => server.app.inject({ method: 'GET', url: '/api/auth/openid/auth?provider=facebook', remoteAddress });
    for (let attempt = 0; attempt < 30; attempt += 1) assert.equal((await start('192.0.2.1')).statusCode, 307);
    assertError(await start('192.0.2.1'), 429, 'RATE_LIMITED');
    assert.equal((await start('192.0.2.2')).statusCode, 307);
  });
});
