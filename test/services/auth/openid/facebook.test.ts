import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestServer } from '../../../support/server.ts';
import { cookie, createUser, postJson, totpAt } from '../support/auth.ts';
import { Mailbox } from '../support/mailbox.ts';
import { redirectTarget, TestBrowser } from './support/browser.ts';
import { startSignIn } from './support/flows.ts';
import { FakeFacebook } from './support/facebook.ts';
import type { FacebookUser } from './support/facebook.ts';

const PUBLIC_URL = 'http://localhost:8080';
const WEB_URL = 'http://localhost:3000';

describeEachEngine('social login: Facebook (OAuth 2.0 and the Graph API, against a local fake)', (engine) => {
  let facebook: FakeFacebook;
  let mailbox: Mailbox;
  let server: TestServer;
  before(async () => {
    facebook = await FakeFacebook.start({ appId: 'fb-app-id', appSecret: 'fb-app-secret' });
    mailbox = await Mailbox.start();
    server = await startTestServer(engine, { RATE_LIMITS: 'off', PUBLIC_URL, WEB_URL, SMTP_URL: mailbox.url, ...facebook.env });
  });
  after(async () => {
    await server.dispose();
    await facebook.close();
    await mailbox.close();
  });

  const db = () => server.database!.db;
  const profile = (token: string) => server.app.inject({ method: 'GET', url: '/api/auth/profile', headers: { authorization: `Bearer ${token}` } });
  const identities = (subject: string) => db().selectFrom('openid_identities').selectAll().where('provider', '=', 'facebook').where('subject', '=', subject).execute();

  /** The whole Facebook flow in one browser; returns our callback's answer and where it leads. */
  async function facebookSignIn(login: FacebookUser | 'decline', browser = new TestBrowser(server)) {
    facebook.nextLogin = login;
    const stop = await browser.atProvider(await startSignIn(browser, 'facebook'));
    assert.ok(stop.returnTo, `${stop.status} ${stop.body}`);
    const response = await browser.app('GET', stop.returnTo);
    return { callback: stop.returnTo, response, landing: redirectTarget(response, 303) };
  }

  function successToken(location: URL): string {
    assert.equal(`${location.origin}${location.pathname}`, `${WEB_URL}/`);
    assert.equal(location.searchParams.get('openid'), 'success');
    return location.searchParams.get('access_token') as string;
  }

  it('signs a new user up with the address unverified (Facebook asserts none), through PKCE and appsecret_proof', async () => {
    const browser = new TestBrowser(server);
    const start = await browser.app('GET', '/api/auth/openid/auth?provider=facebook');
    const dialog = redirectTarget(start, 307);
    assert.equal(`${dialog.origin}${dialog.pathname}`, `${facebook.url}/v19.0/dialog/oauth`);
    assert.equal(dialog.searchParams.get('scope'), 'email public_profile');
    assert.equal(dialog.searchParams.get('redirect_uri'), `${PUBLIC_URL}/api/auth/openid/callback`);
    const binding = cookie(start, 'openid_binding');
    assert.equal(binding?.sameSite, 'Lax', 'plain-http PUBLIC_URL: SameSite=None would need Secure');
    assert.notEqual(binding?.secure, true);

    facebook.nextLogin = { id: '10001', name: 'Fiona Book', email: 'Fiona@Example.com' };
    const stop = await browser.atProvider(dialog);
    const response = await browser.app('GET', stop.returnTo as URL);
    const token = successToken(redirectTarget(response, 303));
    const user = (await profile(token)).json();
    assert.equal(user.email, 'fiona@example.com');
    assert.equal(user.name, 'Fiona Book');
    assert.equal(user.attributes.emailVerified, false);
    assert.equal(cookie(response, 'access_token')?.value, token);

    const request = facebook.tokenRequests.at(-1) as URLSearchParams;
    assert.equal(request.get('client_secret'), 'fb-app-secret');
    assert.match(request.get('code_verifier') ?? '', /^[\w-]{43}$/);
    const [identity] = await identities('10001');
    assert.ok(identity);
    assert.equal(Number(identity.user_id), user.id);
    assert.equal(identity.email_verified, 0);
  });

  it('signs a returning user in by the Facebook id', async () => {
    const first = successToken((await facebookSignIn({ id: '10002', email: 'again@example.com' })).landing);
    const second = successToken((await facebookSignIn({ id: '10002', email: 'changed@example.com' })).landing);
    assert.equal((await profile(second)).json().id, (await profile(first)).json().id);
  });

  it('never links an existing account: error=account_exists', async () => {
    const id = await createUser(server, { email: 'taken@example.com' });
    const { landing, response } = await facebookSignIn({ id: '10003', email: 'taken@example.com' });
    assert.equal(landing.href, `${WEB_URL}/login?error=account_exists`);
    assert.equal(cookie(response, 'access_token'), undefined);
    assert.deepEqual(await identities('10003'), []);
    assert.equal(Number((await db().selectFrom('sessions').select((eb) => eb.fn.countAll().as('n')).where('user_id', '=', id).executeTakeFirstOrThrow()).n), 0);
  });

  it('a Facebook user without an e-mail address cannot sign up: error=email_missing', async () => {
    const { landing } = await facebookSignIn({ id: '10004', name: 'Phone Only' });
    assert.equal(landing.href, `${WEB_URL}/login?error=email_missing`);
    assert.deepEqual(await identities('10004'), []);
  });

  it('declining at the dialog ends at error=cancelled; a reused code at error=exchange_failed', async () => {
    assert.equal((await facebookSignIn('decline')).landing.href, `${WEB_URL}/login?error=cancelled`);

    const browser = new TestBrowser(server);
    const first = await facebookSignIn({ id: '10005', email: 'reuse@example.com' }, browser);
    successToken(first.landing);
    const state = (await startSignIn(browser, 'facebook')).searchParams.get('state') as string;
    const replay = new URL(first.callback);
    replay.searchParams.set('state', state);
    assert.equal(redirectTarget(await browser.app('GET', replay), 303).href, `${WEB_URL}/login?error=exchange_failed`);
  });

  it('once the mailbox is proven by mail, the Facebook identity that made the account stops signing in', async () => {
    successToken((await facebookSignIn({ id: '10006', email: 'claimed@example.com' })).landing);
    assert.equal((await postJson(server, '/api/auth/resend-verification', { email: 'claimed@example.com' })).statusCode, 200);
    const mail = await mailbox.waitFor('claimed@example.com');
    const token = /verify-email\?token=([\w-]+)/.exec(mail.text)?.[1];
    assert.equal((await postJson(server, '/api/auth/verify', { token })).statusCode, 200);

    const { landing } = await facebookSignIn({ id: '10006', email: 'claimed@example.com' });
    assert.equal(landing.href, `${WEB_URL}/login?error=account_exists`);
    assert.deepEqual(await identities('10006'), []);
  });

  it('a Facebook account (address unverified) with two-factor authentication completes /2fa/login', async () => {
    const token = successToken((await facebookSignIn({ id: '10007', email: 'fb-2fa@example.com' })).landing);
    const bearer = { authorization: `Bearer ${token}` };
    const setup = (await server.app.inject({ method: 'POST', url: '/api/auth/2fa/setup', headers: bearer })).json();
    const verified = await server.app.inject({ method: 'POST', url: '/api/auth/2fa/verify', headers: bearer, payload: { code: totpAt(setup.secret, Date.now()) } });
    assert.equal(verified.statusCode, 200, verified.body);

    const { landing } = await facebookSignIn({ id: '10007', email: 'fb-2fa@example.com' });
    assert.equal(`${landing.origin}${landing.pathname}`, `${WEB_URL}/login/2fa`);
    const completed = await postJson(server, '/api/auth/2fa/login', { temp_token: landing.searchParams.get('token'), code: verified.json().backup_codes[0] });
    assert.equal(completed.statusCode, 200, completed.body);
    assert.equal(completed.json().email, 'fb-2fa@example.com');
  });
});
