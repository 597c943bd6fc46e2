import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../../support/engines.ts';
import type { TestEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestServer } from '../../../support/server.ts';
import { assertError, signIn } from '../../../support/api.ts';
import { cookie, createUser, PASSWORD, totpAt } from '../support/auth.ts';
import { redirectTarget, TestBrowser } from './support/browser.ts';
import { redirectSignIn, signInAtProvider, startSignIn } from './support/flows.ts';
import { LocalIdentityProvider } from './support/identity-provider.ts';

const PUBLIC_URL = 'https://tracker.example.com';
const WEB_URL = 'https://web.example.com';
const CALLBACK = `${PUBLIC_URL}/api/auth/openid/callback`;
const GOOGLE = { client_id: 'google-client', client_secret: 'google-secret', redirect_uris: [CALLBACK] };

/** The local provider standing in for Google, and a server that signs in with it; `env` adds to its configuration. */
async function startWithGoogle(engine: TestEngine, env: Record<string, string>): Promise<{ idp: LocalIdentityProvider; server: TestServer }> {
  const idp = await LocalIdentityProvider.start({ client: GOOGLE });
  const server = await startTestServer(engine, {
    RATE_LIMITS: 'off',
    PUBLIC_URL,
    WEB_URL,
    OIDC_GOOGLE_CLIENT_ID: GOOGLE.client_id,
    OIDC_GOOGLE_CLIENT_SECRET: GOOGLE.client_secret,
    OIDC_GOOGLE_ISSUER: idp.issuer,
    ...env,
  });
  return { idp, server };
}

describeEachEngine('social login: the redirect flow against a local OpenID provider (as google)', (engine) => {
  let idp: LocalIdentityProvider;
  let server: TestServer;
  before(async () => ({ idp, server } = await startWithGoogle(engine, { APP_SCHEME: 'fleetapp' })));
  after(async () => {
    await server.dispose();
    await idp.close();
  });

  const db = () => server.database!.db;
  const profile = (token: string) => server.app.inject({ method: 'GET', url: '/api/auth/profile', headers: { authorization: `Bearer ${token}` } });
  const identities = (subject: string) => db().selectFrom('openid_identities').selectAll().where('subject', '=', subject).execute();
  const sessionsOf = async (userId: number) => Number((await db().selectFrom('sessions').select((eb) => eb.fn.countAll().as('n')).where('user_id', '=', userId).executeTakeFirstOrThrow()).n);
  const userCount = async () => Number((await db().selectFrom('users').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const errorLanding = (reason: string) => `${WEB_URL}/login?error=${reason}`;

  /** The access token of a success landing on the web app. */
  function successToken(location: string | undefined): string {
    assert.ok(location?.startsWith(`${WEB_URL}?openid=success&access_token=`), location);
    return new URL(location as string).searchParams.get('access_token') as string;
  }

  it('signs a new user up: verified e-mail, no terms accepted, a working token and the session cookies', async () => {
    idp.accounts.set('g-new', { email: 'New.Person@Example.com', email_verified: true, name: 'New Person' });
    const browser = new TestBrowser(server);
    const { response } = await redirectSignIn(browser, 'google', 'g-new');
    const token = successToken(response.headers.location as string);

    const me = await profile(token);
    assert.equal(me.statusCode, 200, me.body);
    const user = me.json();
    assert.equal(user.email, 'new.person@example.com');
    assert.equal(user.name, 'New Person');
    assert.deepEqual(user.attributes, { emailVerified: true, twoFactorEnabled: false });

    assert.equal(cookie(response, 'access_token')?.value, token);
    assert.equal(cookie(response, 'access_token')?.secure, true);
    assert.ok(cookie(response, 'refresh_token')?.value);
    assert.equal(response.headers['cache-control'], 'no-store');

    const [identity, ...more] = await identities('g-new');
    assert.ok(identity);
    assert.equal(more.length, 0);
    assert.equal(identity.provider, 'google');
    assert.equal(Number(identity.user_id), user.id);
    assert.equal(identity.email_verified, 1);
    const row = await db().selectFrom('users').selectAll().where('id', '=', user.id).executeTakeFirstOrThrow();
    assert.equal(row.password_hash, null);
  });
  it('signs a returning user in by the provider subject, even after the address changed at the provider', async () => {
    idp.accounts.set('g-return', { email: 'return@example.com', email_verified: true, name: 'Returning' });
    const first = successToken((await redirectSignIn(new TestBrowser(server), 'google', 'g-return')).response.headers.location as string);
    const userId = (await profile(first)).json().id;
    const before = await userCount();

    idp.accounts.set('g-return', { email: 'renamed@example.com', email_verified: true, name: 'Renamed' });
    const second = successToken((await redirectSignIn(new TestBrowser(server), 'google', 'g-return')).response.headers.location as string);
    const me = (await profile(second)).json();
    assert.equal(me.id, userId);
    assert.equal(me.email, 'return@example.com', 'the account keeps its own address');
    assert.equal(await userCount(), before);
    assert.equal((await identities('g-return')).length, 1);
    assert.equal(await sessionsOf(userId), 2);
  });

  it('links an existing verified account when the provider asserts the same verified address', async () => {
    const id = await createUser(server, { email: 'linked@example.com', name: 'Password User' });
    idp.accounts.set('g-linked', { email: 'Linked@example.com', email_verified: true, name: 'Other Name' });
    const token = successToken((await redirectSignIn(new TestBrowser(server), 'google', 'g-linked')).response.headers.location as string);
    const me = (await profile(token)).json();
    assert.equal(me.id, id);
    assert.equal(me.name, 'Password User');
    const [identity] = await identities('g-linked');
    assert.ok(identity);
    assert.equal(Number(identity.user_id), id);
    await signIn(server, 'linked@example.com', { password: PASSWORD });
  });

  it('refuses to link an account whose own address is unverified: error=account_exists, nothing linked', async () => {
    const id = await createUser(server, { email: 'unverified-own@example.com', verified: false });
    idp.accounts.set('g-unverified-own', { email: 'unverified-own@example.com', email_verified: true });
    const { landing } = await redirectSignIn(new TestBrowser(server), 'google', 'g-unverified-own');
    assert.equal(landing.href, errorLanding('account_exists'));
    assert.deepEqual(await identities('g-unverified-own'), []);
    assert.equal(await sessionsOf(id), 0);
  });

  it('refuses an address the provider does not assert as verified: error=email_unverified, no account', async () => {
    idp.accounts.set('g-unverified', { email: 'not-verified@example.com', email_verified: false });
    const before = await userCount();
    const { landing, response } = await redirectSignIn(new TestBrowser(server), 'google', 'g-unverified');
    assert.equal(landing.href, errorLanding('email_unverified'));
    assert.equal(cookie(response, 'access_token'), undefined);
    assert.equal(await userCount(), before);
  });

  it('sends a 2FA user to /login/2fa with a temp_token that /2fa/login completes', async () => {
    const id = await createUser(server, { email: 'two-factor@example.com' });
    const session = await signIn(server, 'two-factor@example.com', { password: PASSWORD });
    const setup = (await server.app.inject({ method: 'POST', url: '/api/auth/2fa/setup', headers: session.authorization })).json();
    const verified = await server.app.inject({ method: 'POST', url: '/api/auth/2fa/verify', headers: session.authorization, payload: { code: totpAt(setup.secret, Date.now()) } });
    const backupCode = verified.json().backup_codes[0] as string;
    idp.accounts.set('g-2fa', { email: 'two-factor@example.com', email_verified: true });
    const sessionsBefore = await sessionsOf(id);

    const { response, landing } = await redirectSignIn(new TestBrowser(server), 'google', 'g-2fa');
    assert.equal(`${landing.origin}${landing.pathname}`, `${WEB_URL}/login/2fa`);
    assert.equal(landing.searchParams.get('type'), 'totp');
    assert.equal(cookie(response, 'access_token'), undefined, 'no session before the second factor');
    assert.equal(await sessionsOf(id), sessionsBefore);

    const completed = await server.app.inject({ method: 'POST', url: '/api/auth/2fa/login', payload: { temp_token: landing.searchParams.get('token'), code: backupCode } });
    assert.equal(completed.statusCode, 200, completed.body);
    assert.equal(completed.json().id, id);

    await db().updateTable('two_factor').set({ method: 'email' }).where('user_id', '=', id).execute();
    const byEmail = await redirectSignIn(new TestBrowser(server), 'google', 'g-2fa');
    assert.equal(`${byEmail.landing.origin}${byEmail.landing.pathname}`, `${WEB_URL}/login/2fa`);
    assert.equal(byEmail.landing.searchParams.get('type'), 'email');
  });

  it('ret=app answers with the app scheme: success without cookies, 2FA, and errors', async () => {
    idp.accounts.set('g-app', { email: 'app-user@example.com', email_verified: true });
    const success = await redirectSignIn(new TestBrowser(server), 'google', 'g-app', 'app');
    const location = success.response.headers.location as string;
    assert.ok(location.startsWith('fleetapp://oauthredirect?openid=success&access_token='), location);
    assert.equal((await profile(success.landing.searchParams.get('access_token') as string)).json().email, 'app-user@example.com');
    assert.equal(cookie(success.response, 'access_token'), undefined);

    const declined = await redirectSignIn(new TestBrowser(server), 'google', 'decline', 'app');
    assert.equal(declined.response.headers.location, 'fleetapp://oauthredirect?openid=error&error=cancelled');

    const userId = (await profile(success.landing.searchParams.get('access_token') as string)).json().id;
    // 2FA on (the secret is never read: the flow stops before a code is asked for).
    await db().insertInto('two_factor').values({ user_id: userId, secret: 'x', enabled_at: Date.now(), last_used_step: 0, updated_at: Date.now() }).execute();
    const twoFactor = await redirectSignIn(new TestBrowser(server), 'google', 'g-app', 'app');
    const target = twoFactor.response.headers.location as string;
    assert.match(target, /^fleetapp:\/\/oauthredirect\?openid=2fa&token=[\w-]+&type=totp$/);
    await db().updateTable('two_factor').set({ method: 'email' }).where('user_id', '=', userId).execute();
    const byEmail = await redirectSignIn(new TestBrowser(server), 'google', 'g-app', 'app');
    assert.match(byEmail.response.headers.location as string, /^fleetapp:\/\/oauthredirect\?openid=2fa&token=[\w-]+&type=email$/);
  });

  it('a replayed callback is refused: error=invalid_state, no second session', async () => {
    idp.accounts.set('g-replay', { email: 'replay@example.com', email_verified: true });
    const browser = new TestBrowser(server);
    const { callback, response } = await redirectSignIn(browser, 'google', 'g-replay');
    const userId = (await profile(successToken(response.headers.location as string))).json().id;
    const replayed = await browser.app('GET', callback);
    assert.equal(redirectTarget(replayed, 303).href, errorLanding('invalid_state'));
    assert.equal(cookie(replayed, 'access_token'), undefined);
    assert.equal(await sessionsOf(userId), 1);
  });

  it('a state the server never issued is refused: error=invalid_state', async () => {
    const browser = new TestBrowser(server);
    await startSignIn(browser, 'google');
    const forged = await browser.app('GET', `/api/auth/openid/callback?code=abc&state=${'x'.repeat(43)}`);
    assert.equal(redirectTarget(forged, 303).href, errorLanding('invalid_state'));
    const none = await browser.app('GET', '/api/auth/openid/callback?code=abc');
    assert.equal(redirectTarget(none, 303).href, errorLanding('invalid_state'));
  });

  it('a callback from another browser (no binding cookie) is refused, and leaves the state to its own browser', async () => {
    idp.accounts.set('g-binding', { email: 'binding@example.com', email_verified: true });
    const browser = new TestBrowser(server);
    const stop = await signInAtProvider(browser, await startSignIn(browser, 'google'), 'g-binding');
    const elsewhere = await browser.app('GET', stop.returnTo as URL, { cookies: false });
    assert.equal(redirectTarget(elsewhere, 303).href, errorLanding('invalid_state'));
    const wrongCookie = await server.app.inject({ method: 'GET', url: `${stop.returnTo?.pathname}${stop.returnTo?.search}`, headers: { cookie: `openid_binding=${'A'.repeat(43)}` } });
    assert.equal(redirectTarget(wrongCookie, 303).href, errorLanding('invalid_state'));
    successToken((await browser.app('GET', stop.returnTo as URL)).headers.location as string);
  });

  it('an expired state is refused: error=state_expired', async () => {
    idp.accounts.set('g-late', { email: 'late@example.com', email_verified: true });
    const browser = new TestBrowser(server);
    const stop = await signInAtProvider(browser, await startSignIn(browser, 'google'), 'g-late');
    await db().updateTable('openid_states').set({ expires_at: Date.now() - 1 }).where('consumed_at', 'is', null).execute();
    assert.equal(redirectTarget(await browser.app('GET', stop.returnTo as URL), 303).href, errorLanding('state_expired'));
    assert.deepEqual(await identities('g-late'), []);
  });

  it('a replayed authorization code is refused by the provider: error=exchange_failed', async () => {
    idp.accounts.set('g-code', { email: 'code@example.com', email_verified: true });
    const browser = new TestBrowser(server);
    const first = await redirectSignIn(browser, 'google', 'g-code');
    successToken(first.response.headers.location as string);

    const second = await startSignIn(browser, 'google');
    const replay = new URL(first.callback);
    replay.searchParams.set('state', second.searchParams.get('state') as string);
    assert.equal(redirectTarget(await browser.app('GET', replay), 303).href, errorLanding('exchange_failed'));
  });

  it("the provider's error answers end at /login?error=: cancelled when declined, provider_error otherwise", async () => {
    const declined = await redirectSignIn(new TestBrowser(server), 'google', 'decline');
    assert.equal(declined.landing.href, errorLanding('cancelled'));

    const browser = new TestBrowser(server);
    const state = (await startSignIn(browser, 'google')).searchParams.get('state') as string;
    const failed = await browser.app('GET', `/api/auth/openid/callback?error=temporarily_unavailable&state=${state}`);
    assert.equal(redirectTarget(failed, 303).href, errorLanding('provider_error'));
  });

  it('a disabled account is refused: error=account_disabled', async () => {
    const id = await createUser(server, { email: 'disabled@example.com' });
    idp.accounts.set('g-disabled', { email: 'disabled@example.com', email_verified: true });
    successToken((await redirectSignIn(new TestBrowser(server), 'google', 'g-disabled')).response.headers.location as string);
    await db().updateTable('users').set({ disabled: 1 }).where('id', '=', id).execute();
    const { landing } = await redirectSignIn(new TestBrowser(server), 'google', 'g-disabled');
    assert.equal(landing.href, errorLanding('account_disabled'));
  });

  it('deleting the account removes its links: the next sign-in makes a new account', async () => {
    idp.accounts.set('g-deleted', { email: 'deleted@example.com', email_verified: true });
    const token = successToken((await redirectSignIn(new TestBrowser(server), 'google', 'g-deleted')).response.headers.location as string);
    const oldId = (await profile(token)).json().id;
    const deleted = await server.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: { authorization: `Bearer ${token}` } });
    assert.equal(deleted.statusCode, 204, deleted.body);
    assert.deepEqual(await identities('g-deleted'), []);
    const again = successToken((await redirectSignIn(new TestBrowser(server), 'google', 'g-deleted')).response.headers.location as string);
    assert.notEqual((await profile(again)).json().id, oldId);
  });

  it('GET /openid/auth: the authorization request, the stored state and the binding cookie', async () => {
    const browser = new TestBrowser(server);
    const response = await browser.app('GET', '/api/auth/openid/auth?provider=google');
    const target = redirectTarget(response, 307);
    assert.equal(`${target.origin}${target.pathname}`, `${idp.issuer}/auth`);
    const query = target.searchParams;
    assert.equal(query.get('client_id'), GOOGLE.client_id);
    assert.equal(query.get('redirect_uri'), CALLBACK);
    assert.equal(query.get('response_type'), 'code');
    assert.equal(query.get('scope'), 'openid email profile');
    assert.equal(query.get('code_challenge_method'), 'S256');
    assert.match(query.get('code_challenge') ?? '', /^[\w-]{43}$/);
    const state = query.get('state') as string;
    const stored = await db().selectFrom('openid_states').selectAll().where('nonce', '=', query.get('nonce')).executeTakeFirstOrThrow();
    assert.notEqual(stored.state_hash, state, 'only a digest of the state is stored');
    assert.equal(stored.provider, 'google');
    assert.equal(stored.ret, 'web');
    assert.equal(Number(stored.expires_at) - Number(stored.created_at), 600_000);
    assert.equal(response.headers['cache-control'], 'no-store');

    const binding = cookie(response, 'openid_binding');
    assert.match(binding?.value ?? '', /^[\w-]{43}$/);
    assert.equal(binding?.httpOnly, true);
    assert.equal(binding?.secure, true);
    assert.equal(binding?.sameSite, 'None', "Apple's form_post is a cross-site POST");
    assert.equal(binding?.path, '/api/auth/openid');
    assert.equal(binding?.maxAge, 600);
    const again = await browser.app('GET', '/api/auth/openid/auth?provider=google&ret=app');
    assert.equal(cookie(again, 'openid_binding')?.value, binding?.value, 'a second tab shares the binding');
  });

  it('GET /openid/auth refuses unknown and unconfigured providers with 400 and stores nothing', async () => {
    const count = async () => Number((await db().selectFrom('openid_states').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    const before = await count();
    const get = (query: string) => server.app.inject({ method: 'GET', url: `/api/auth/openid/auth${query}` });
    assertError(await get('?provider=facebook'), 400, 'OPENID_PROVIDER_NOT_CONFIGURED');
    assertError(await get('?provider=apple&ret=app'), 400, 'OPENID_PROVIDER_NOT_CONFIGURED');
    assertError(await get('?provider=github'), 400, 'VALIDATION_FAILED');
    assertError(await get(''), 400, 'VALIDATION_FAILED');
    assertError(await get('?provider=google&ret=desktop'), 400, 'VALIDATION_FAILED');
    assertError(await get(`?provider=${'g'.repeat(5000)}`), 400, 'VALIDATION_FAILED');
    assert.equal(await count(), before);
  });

  it('the callback refuses oversized parameters with 400', async () => {
    assertError(await server.app.inject({ method: 'GET', url: `/api/auth/openid/callback?code=${'c'.repeat(3000)}&state=s` }), 400, 'VALIDATION_FAILED');
  });
});

describeEachEngine('social login: registration disabled, and an unreachable provider', (engine) => {
  let idp: LocalIdentityProvider;
  let server: TestServer;
  before(async () => {
    ({ idp, server } = await startWithGoogle(engine, {
      REGISTRATION_ENABLED: 'false',
      // Nothing listens on port 9 (discard): discovery fails.
      OIDC_APPLE_ISSUER: 'http://127.0.0.1:9',
      OIDC_APPLE_CLIENT_ID: 'com.example.web',
      OIDC_APPLE_TEAM_ID: 'TEAM123456',
      OIDC_APPLE_KEY_ID: 'KEY1234567',
      OIDC_APPLE_PRIVATE_KEY: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    }));
  });
  after(async () => {
    await server.dispose();
    await idp.close();
  });

  it('makes no new account (error=registration_disabled) but still links an existing one', async () => {
    idp.accounts.set('g-stranger', { email: 'stranger@example.com', email_verified: true });
    const refused = await redirectSignIn(new TestBrowser(server), 'google', 'g-stranger');
    assert.equal(refused.landing.href, `${WEB_URL}/login?error=registration_disabled`);
    assert.equal(await server.auth!.api.users.findByEmail('stranger@example.com'), undefined);

    const id = await createUser(server, { email: 'member@example.com' });
    idp.accounts.set('g-member', { email: 'member@example.com', email_verified: true });
    const linked = await redirectSignIn(new TestBrowser(server), 'google', 'g-member');
    assert.ok((linked.response.headers.location as string).startsWith(`${WEB_URL}?openid=success&access_token=`));
    assert.equal((await server.database!.db.selectFrom('openid_identities').select('user_id').where('subject', '=', 'g-member').executeTakeFirstOrThrow()).user_id, id);
  });

  it('a provider that cannot be reached ends at error=provider_unavailable', async () => {
    const response = await server.app.inject({ method: 'GET', url: '/api/auth/openid/auth?provider=apple' });
    assert.equal(redirectTarget(response, 303).href, `${WEB_URL}/login?error=provider_unavailable`);
    const app = await server.app.inject({ method: 'GET', url: '/api/auth/openid/auth?provider=apple&ret=app' });
    assert.equal(app.headers.location, 'trackstack://oauthredirect?openid=error&error=provider_unavailable');
  });
});
