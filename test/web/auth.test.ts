import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Secret, TOTP } from 'otpauth';
import type { Browser } from 'playwright-core';
import { errorWords, t } from '../../web/src/i18n.ts';
import { browserUnavailable, captureScreen, launchBrowser, newPage, signInOnPage, startWebServer } from '../support/browser.ts';
import type { WebServer } from '../support/browser.ts';

const unavailable = browserUnavailable();

/** The TOTP code of `secret` for the step `stepsAhead` steps from now (the server accepts ±1 and never the same step twice). */
function totp(secret: string, stepsAhead = 0): string {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: Date.now() + stepsAhead * 30_000 });
}


describe('web app: accounts', { skip: unavailable }, () => {
  let web: WebServer;
  let browser: Browser;
  const email = 'ada@example.com';
  const password = 'Correct-Horse-9';

  before(async () => {
    web = await startWebServer();
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await web?.close();
  });

  it('signs up, verifies the e-mail with the code from the mail, and lands on an empty map', async () => {
    const { page, context } = await newPage(browser);
    await page.goto(`${web.url}/register`);
    await captureScreen(page, 'register');
    await page.getByLabel(t.fields.name).fill('Ada');
    await page.getByLabel(t.fields.email).fill(email);
    await page.getByLabel(t.fields.password).fill(password);
    await page.getByRole('button', { name: t.register.submit }).click();
    await page.getByText(errorWords.TERMS_NOT_ACCEPTED as string).waitFor();
    await page.getByLabel(t.register.terms).check();
    await page.getByRole('button', { name: t.register.submit }).click();

    await page.getByRole('heading', { name: t.verify.title }).waitFor();
    assert.match(page.url(), /\/verify-email\?email=ada%40example\.com/);
    assert.equal(await page.getByRole('button', { name: t.verify.resendIn(30) }).isDisabled(), true, 'resend waits 30 s');
    await captureScreen(page, 'verify-email');
    const mail = await web.mailbox.waitFor(email);
    const code = /\b(\d{6})\b/.exec(mail.text)?.[1];
    assert.ok(code, mail.text);
    await page.getByLabel(t.fields.code, { exact: true }).fill(code === '000000' ? '111111' : '000000');
    await page.getByRole('button', { name: t.verify.submit }).click();
    await page.getByText(errorWords.INVALID_VERIFICATION_CODE as string).waitFor();
    await page.getByLabel(t.fields.code, { exact: true }).fill(code);
    await page.getByRole('button', { name: t.verify.submit }).click();
    await page.getByText(t.verify.done).waitFor();

    await signInOnPage(page, web, email, 'Wrong-password-1');
    await page.getByText(errorWords.INVALID_CREDENTIALS as string).waitFor();
    await captureScreen(page, 'sign-in');
    await signInOnPage(page, web, email, password);
    await page.getByRole('heading', { name: t.map.emptyTitle }).waitFor();
    await captureScreen(page, 'map-empty');
    const cookies = await context.cookies();
    assert.ok(cookies.some((cookie) => cookie.name === 'access_token' && cookie.httpOnly), 'the session is an HttpOnly cookie');
    assert.deepEqual(await page.evaluate(() => Object.keys(localStorage)), [], 'nothing in localStorage');
    await context.close();
  });

  it('signed out, sends no request bound to fail; the signed_in cookie comes with the session and goes with it', async () => {
    const { page, context } = await newPage(browser);
    const other = 'signed-out@example.com';
    await web.server.auth?.api.accounts.create({ email: other, password, emailVerified: true });
    const refused: string[] = [];
    page.on('response', (response) => {
      if (response.status() >= 400) refused.push(`${response.status()} ${new URL(response.url()).pathname}`);
    });
    const signedInCookie = async () => (await context.cookies()).find((cookie) => cookie.name === 'signed_in');

    await page.goto(`${web.url}/`);
    await page.getByRole('heading', { name: t.signIn.title }).waitFor();
    await signInOnPage(page, web, other, password);
    await page.getByRole('heading', { name: t.map.emptyTitle }).waitFor();
    assert.equal((await signedInCookie())?.httpOnly, false, 'the page reads it');
    await page.reload();
    await page.getByRole('heading', { name: t.map.emptyTitle }).waitFor();

    await page.getByRole('button', { name: t.nav.signOut }).click();
    await page.getByRole('heading', { name: t.signIn.title }).waitFor();
    assert.equal(await signedInCookie(), undefined);
    await page.reload();
    await page.getByRole('heading', { name: t.signIn.title }).waitFor();
    assert.deepEqual(refused, [], 'no 401 from asking for the profile while signed out');
    await context.close();
  });

  it('turns on two-step verification with the QR code, then signs in with a TOTP code', async () => {
    const { page, context } = await newPage(browser);
    await signInOnPage(page, web, email, password);
    await page.getByRole('heading', { name: t.map.emptyTitle }).waitFor();
    await page.getByRole('link', { name: t.nav.account, exact: true }).click();
    await page.getByRole('button', { name: t.account.setup }).click();
    const secret = (await page.locator('code.secret').textContent()) ?? '';
    assert.match(secret, /^[A-Z2-7]+=*$/);
    await page.locator('.qr svg').waitFor();
    await captureScreen(page, 'two-factor-setup');
    await page.getByLabel(t.fields.code, { exact: true }).fill(totp(secret));
    await page.getByRole('button', { name: t.account.confirm }).click();
    await page.getByText(t.account.backupCodes, { exact: true }).waitFor();
    assert.equal(await page.locator('.codes li').count(), 10);
    const codesLayout = await page.evaluate<{ bullets: string; columns: number }>(
      "(() => { const list = document.querySelector('.codes'); return { bullets: getComputedStyle(list).listStyleType, columns: new Set(Array.from(list.querySelectorAll('code'), (code) => Math.round(code.getBoundingClientRect().left))).size }; })()",
    );
    assert.deepEqual(codesLayout, { bullets: 'none', columns: 2 }, 'two columns of codes, and no bullet of the second to run into a code of the first');
    await captureScreen(page, 'account');
    await page.getByRole('button', { name: t.nav.signOut }).click();

    await signInOnPage(page, web, email, password);
    await page.getByRole('heading', { name: t.twoFactor.title }).waitFor();
    assert.match(page.url(), /\/login\/2fa\?type=totp$/, 'the temp token stays out of the address');
    await page.getByLabel(t.fields.code, { exact: true }).fill('123456');
    await page.getByRole('button', { name: t.twoFactor.submit }).click();
    await page.getByText(errorWords.INVALID_2FA_LOGIN_CODE as string).waitFor();
    await captureScreen(page, 'two-factor-login');
    await page.getByLabel(t.fields.code, { exact: true }).fill(totp(secret, 1));
    await page.getByRole('button', { name: t.twoFactor.submit }).click();
    await page.getByRole('heading', { name: t.map.emptyTitle }).waitFor();
    await context.close();
  });

  it('resets the password from the mailed link', async () => {
    const { page, context } = await newPage(browser);
    const other = 'grace@example.com';
    await web.server.auth?.api.accounts.create({ email: other, password, emailVerified: true });
    await page.goto(`${web.url}/reset-password`);
    await page.getByLabel(t.fields.email).fill(other);
    await page.getByRole('button', { name: t.reset.requestSubmit }).click();
    await page.getByText(t.reset.requested).waitFor();
    await captureScreen(page, 'reset-request');
    const mail = await web.mailbox.waitFor(other);
    const link = /https?:\/\/\S+\/reset-password\?token=[\w%-]+/.exec(mail.text)?.[0];
    assert.ok(link?.startsWith(web.url), mail.text);
    const resetLink = link as string;

    await page.goto(`${web.url}/reset-password?token=not-a-token`);
    await page.getByLabel(t.fields.newPassword).fill('Another-Secret-7');
    await page.getByRole('button', { name: t.reset.updateSubmit }).click();
    await page.getByText(errorWords.INVALID_TOKEN as string).waitFor();

    await page.goto(resetLink);
    await page.getByLabel(t.fields.newPassword).fill('weak');
    await page.getByRole('button', { name: t.reset.updateSubmit }).click();
    await page.getByText(errorWords.WEAK_PASSWORD as string).waitFor();
    await page.getByLabel(t.fields.newPassword).fill('Another-Secret-7');
    await page.getByRole('button', { name: t.reset.updateSubmit }).click();
    await page.getByText(t.reset.updated).waitFor();
    await captureScreen(page, 'reset-done');
    await signInOnPage(page, web, other, 'Another-Secret-7');
    await page.getByRole('heading', { name: t.map.emptyTitle }).waitFor();
    await context.close();
  });

  it('lands the links of mails and social sign-in: /verify-email?token=, /login?error=, /login/2fa?token=, ?openid=success', async () => {
    const { page, context } = await newPage(browser);
    const email = 'linus@example.com';
    const registered = await web.server.app.inject({
      method: 'POST',
      url: '/api/auth/register',
      payload: { email, password, name: 'Linus', termsPrivacyAccepted: true },
    });
    assert.equal(registered.statusCode, 201, registered.body);
    const mail = await web.mailbox.waitFor(email);
    const link = /https?:\/\/\S+\/verify-email\?token=[\w%-]+/.exec(mail.text)?.[0];
    assert.ok(link?.startsWith(web.url), mail.text);
    await page.goto(link as string);
    await page.getByText(t.verify.done).waitFor();
    await captureScreen(page, 'verify-link');
    await page.goto(link as string);
    await page.getByText(errorWords.INVALID_TOKEN as string).waitFor();

    await page.goto(`${web.url}/login?error=access_denied`);
    await page.getByText(t.signIn.socialFailed('access_denied')).waitFor();

    await page.goto(`${web.url}/login/2fa?token=expired-or-forged&type=email`);
    await page.getByText(t.twoFactor.emailHint).waitFor();
    await page.getByLabel(t.fields.code, { exact: true }).fill('123456');
    await page.getByRole('button', { name: t.twoFactor.submit }).click();
    await page.getByText(errorWords.TEMP_TOKEN_EXPIRED as string).waitFor();
    await page.getByRole('link', { name: t.signIn.title }).waitFor();

    await signInOnPage(page, web, email, password);
    await page.getByRole('heading', { name: t.map.emptyTitle }).waitFor();
    await page.goto(`${web.url}/?openid=success&access_token=from-the-provider-redirect`);
    await page.getByRole('heading', { name: t.map.emptyTitle }).waitFor();
    assert.equal(new URL(page.url()).search, '', 'the token leaves the address bar');
    await context.close();
  });
});
