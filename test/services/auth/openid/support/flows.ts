import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { redirectTarget } from './browser.ts';
import type { TestBrowser } from './browser.ts';

/** GET /openid/auth: asserts the 307 and returns the provider URL. */
export async function startSignIn(browser: TestBrowser, provider: string, ret?: 'web' | 'app'): Promise<URL> {
  const query = new URLSearchParams({ provider, ...(ret ? { ret } : {}) });
  return redirectTarget(await browser.app('GET', `/api/auth/openid/auth?${query}`), 307);
}

/** At the local identity provider: reaches its login page, then signs `account` in (or declines). */
export async function signInAtProvider(browser: TestBrowser, providerUrl: URL, account: string | 'decline') {
  const page = await browser.atProvider(providerUrl);
  assert.equal(page.status, 200, page.body);
  assert.match(page.url.pathname, /^\/interaction\//);
  return browser.atProvider(account === 'decline' ? `${page.url.href}/abort` : `${page.url.href}/login?account=${encodeURIComponent(account)}`);
}

/** The whole redirect flow of a query-mode provider; returns the callback URL and our answer to it. */
export async function redirectSignIn(
  browser: TestBrowser,
  provider: string,
  account: string | 'decline',
  ret?: 'web' | 'app',
): Promise<{ callback: URL; response: LightMyRequestResponse; landing: URL }> {
  const stop = await signInAtProvider(browser, await startSignIn(browser, provider, ret), account);
  assert.ok(stop.returnTo, `the provider did not redirect back: ${stop.status} ${stop.body}`);
  const response = await browser.app('GET', stop.returnTo);
  return { callback: stop.returnTo, response, landing: redirectTarget(response, 303) };
}
