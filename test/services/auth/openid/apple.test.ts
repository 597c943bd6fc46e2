import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, it } from 'node:test';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import type { JWTPayload } from 'jose';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestServer } from '../../../support/server.ts';
import { assertError } from '../../../support/api.ts';
import { postJson } from '../support/auth.ts';
import { redirectTarget, TestBrowser } from './support/browser.ts';
import { signInAtProvider, startSignIn } from './support/flows.ts';
import { LocalIdentityProvider } from './support/identity-provider.ts';

const PUBLIC_URL = 'https://tracker.example.com';
const WEB_URL = 'https://web.example.com';
const CALLBACK = `${PUBLIC_URL}/api/auth/openid/callback`;
const CLIENT_ID = 'com.example.tracker.web';
const TEAM_ID = 'TEAM123456';
const KEY_ID = 'KEY1234567';
/** What the local Apple knows the client by once its JWT secret checked out. */
const REGISTERED_SECRET = 'secret-known-only-to-the-local-apple';

describeEachEngine('social login: Apple (form_post, a JWT client secret) against a local OpenID provider', (engine) => {
  const appleKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  /** Each client secret the token endpoint received, verified, with its header. */
  const secrets: { jwt: string; header: ReturnType<typeof decodeProtectedHeader>; claims: JWTPayload }[] = [];
  let tamperIdToken = false;
  let idp: LocalIdentityProvider;
  let server: TestServer;

  before(async () => {
    idp = await LocalIdentityProvider.start({
      client: { client_id: CLIENT_ID, client_secret: REGISTERED_SECRET, redirect_uris: [CALLBACK] },
      tokenEndpoint: {
        // Apple's check of the client secret: ES256 by the team's key, iss team id, sub client id, aud Apple.
        async checkRequest(form) {
          const jwt = form.get('client_secret') ?? '';
          const { payload } = await jwtVerify(jwt, appleKey.publicKey, { algorithms: ['ES256'], issuer: TEAM_ID, subject: CLIENT_ID, audience: idp.issuer });
          const header = decodeProtectedHeader(jwt);
          if (header.kid !== KEY_ID) throw new Error(`unknown key ${header.kid}`);
          secrets.push({ jwt, header, claims: payload });
          form.set('client_secret', REGISTERED_SECRET);
          return form;
        },
        changeResponse: (body) => (tamperIdToken ? { ...body, id_token: `${String(body.id_token).slice(0, -4)}AAAA` } : body),
      },
    });
    server = await startTestServer(engine, {
      RATE_LIMITS: 'off',
      PUBLIC_URL,
      WEB_URL,
      OIDC_APPLE_ISSUER: idp.issuer,
      OIDC_APPLE_CLIENT_ID: CLIENT_ID,
      OIDC_APPLE_TEAM_ID: TEAM_ID,
      OIDC_APPLE_KEY_ID: KEY_ID,
      OIDC_APPLE_PRIVATE_KEY: appleKey.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    });
  });
  after(async () => {
    await server.dispose();
    await idp.close();
  });

  const profile = (token: string) => server.app.inject({ method: 'GET', url: '/api/auth/profile', headers: { authorization: `Bearer ${token}` } });

  /** Signs in at the local Apple and returns the auto-submitting form it answers with (form_post). */
  async function appleForm(browser: TestBrowser, account: string | 'decline') {
    const stop = await signInAtProvider(browser, await startSignIn(browser, 'apple'), account);
    const action = /<form method="post" action="([^"]+)"/.exec(stop.body)?.[1];
    assert.equal(action, CALLBACK, stop.body);
    const form = new URLSearchParams();
    for (const [, name, value] of stop.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/>/g)) {
      form.set(name as string, (value as string).replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&'));
    }
    return form;
  }

  async function postCallback(browser: TestBrowser, form: URLSearchParams) {
    const response = await browser.app('POST', '/api/auth/openid/callback', { form });
    return { response, landing: redirectTarget(response, 303) };
  }

  it('asks for form_post and the name and e-mail scopes', async () => {
    const target = await startSignIn(new TestBrowser(server), 'apple');
    assert.equal(target.searchParams.get('response_mode'), 'form_post');
    assert.equal(target.searchParams.get('scope'), 'openid name email');
    assert.equal(target.searchParams.get('client_id'), CLIENT_ID);
    assert.equal(target.searchParams.get('code_challenge_method'), 'S256');
  });

  it('signs a new user up from the POSTed callback, named from the first authorization\'s user field', async () => {
    idp.accounts.set('apple-001', { email: 'jane@privaterelay.appleid.com', email_verified: 'true' });
    const browser = new TestBrowser(server);
    const form = await appleForm(browser, 'apple-001');
    assert.ok(form.get('code') && form.get('state'));
    form.set('user', JSON.stringify({ name: { firstName: 'Jane', lastName: 'Appleseed' }, email: 'jane@privaterelay.appleid.com' }));
    const { response, landing } = await postCallback(browser, form);
    assert.ok((response.headers.location as string).startsWith(`${WEB_URL}?openid=success&access_token=`));
    const user = (await profile(landing.searchParams.get('access_token') as string)).json();
    assert.equal(user.email, 'jane@privaterelay.appleid.com');
    assert.equal(user.name, 'Jane Appleseed');
    assert.equal(user.attributes.emailVerified, true);

    // Later authorizations carry no user field: the same account, its name kept.
    const again = new TestBrowser(server);
    const second = await postCallback(again, await appleForm(again, 'apple-001'));
    const same = (await profile(second.landing.searchParams.get('access_token') as string)).json();
    assert.equal(same.id, user.id);
    assert.equal(same.name, 'Jane Appleseed');
  });

  it('authenticates at the token endpoint with an ES256 JWT: kid, iss team, sub client, aud Apple, one hour, reused', async () => {
    idp.accounts.set('apple-002', { email: 'secret-check@example.com', email_verified: true });
    const browser = new TestBrowser(server);
    await postCallback(browser, await appleForm(browser, 'apple-002'));
    const latest = secrets.at(-1);
    assert.ok(latest);
    assert.deepEqual(latest.header, { alg: 'ES256', kid: KEY_ID });
    assert.equal(latest.claims.iss, TEAM_ID);
    assert.equal(latest.claims.sub, CLIENT_ID);
    assert.equal(latest.claims.aud, idp.issuer);
    assert.equal((latest.claims.exp as number) - (latest.claims.iat as number), 3600);
    assert.ok(secrets.length >= 2);
    assert.equal(secrets.at(-2)?.jwt, latest.jwt, 'the secret is reused while it lives');
  });

  it('a declined authorization (user_cancelled_authorize) ends at error=cancelled', async () => {
    const browser = new TestBrowser(server);
    const state = (await startSignIn(browser, 'apple')).searchParams.get('state') as string;
    const { landing } = await postCallback(browser, new URLSearchParams({ error: 'user_cancelled_authorize', state }));
    assert.equal(landing.href, `${WEB_URL}/login?error=cancelled`);
  });

  it('an id_token whose signature does not verify ends at error=invalid_id_token', async () => {
    idp.accounts.set('apple-003', { email: 'tampered@example.com', email_verified: true });
    const browser = new TestBrowser(server);
    const form = await appleForm(browser, 'apple-003');
    tamperIdToken = true;
    try {
      const { landing } = await postCallback(browser, form);
      assert.equal(landing.href, `${WEB_URL}/login?error=invalid_id_token`);
    } finally {
      tamperIdToken = false;
    }
    assert.equal(await server.auth!.api.users.findByEmail('tampered@example.com'), undefined);
  });

  it('only the callback parses form bodies; an oversized form is refused', async () => {
    const login = await server.app.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'email=a%40example.com&password=x',
    });
    assertError(login, 415, 'UNSUPPORTED_MEDIA_TYPE');
    const huge = await server.app.inject({
      method: 'POST',
      url: '/api/auth/openid/callback',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `state=s&user=${'x'.repeat(20_000)}`,
    });
    assertError(huge, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('Google is not configured here: its redirect flow and the id_token exchange answer 400', async () => {
    assertError(await server.app.inject({ method: 'GET', url: '/api/auth/openid/auth?provider=google' }), 400, 'OPENID_PROVIDER_NOT_CONFIGURED');
    assertError(await postJson(server, '/api/auth/openid/token', { provider: 'google', id_token: 'x.y.z' }), 400, 'OPENID_PROVIDER_NOT_CONFIGURED');
  });
});
