import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import type { TestServer } from '../../../../support/server.ts';

export interface ProviderStop {
  /** The redirect that leads back to our server (the callback), when one came. */
  returnTo: URL | undefined;
  /** Where the provider stopped redirecting. */
  url: URL;
  status: number;
  body: string;
}

/**
 * Plays the browser of a social sign-in without one: requests to our server go through inject, requests
 * to the providers over HTTP; each side keeps the cookies it was given.
 */
export class TestBrowser {
  private readonly server: TestServer;
  private readonly providerCookies = new Map<string, string>();
  readonly appCookies = new Map<string, string>();

  constructor(server: TestServer) {
    this.server = server;
  }

  /** A request to our server carrying the cookies it set; `form` posts application/x-www-form-urlencoded. */
  async app(method: 'GET' | 'POST', url: string | URL, options: { form?: URLSearchParams; cookies?: boolean } = {}): Promise<LightMyRequestResponse> {
    const target = typeof url === 'string' ? url : `${url.pathname}${url.search}`;
    const headers: Record<string, string> = {};
    if (options.cookies !== false && this.appCookies.size > 0) headers.cookie = cookieHeader(this.appCookies);
    if (options.form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await this.server.app.inject({ method, url: target, headers, ...(options.form ? { payload: options.form.toString() } : {}) });
    for (const cookie of response.cookies as { name: string; value: string; maxAge?: number }[]) {
      if (cookie.value === '' || cookie.maxAge === 0) this.appCookies.delete(cookie.name);
      else this.appCookies.set(cookie.name, cookie.value);
    }
    return response;
  }

  /** Visits a provider URL and follows its redirects until one points back to PUBLIC_URL, or a page answers. */
  async atProvider(url: string | URL): Promise<ProviderStop> {
    let next = new URL(url);
    const publicOrigin = new URL(this.server.config.publicUrl).origin;
    for (let hops = 0; hops < 10; hops += 1) {
      const response = await fetch(next, { redirect: 'manual', headers: this.providerCookies.size > 0 ? { cookie: cookieHeader(this.providerCookies) } : {} });
      for (const line of response.headers.getSetCookie()) {
        const [pair = '', ...attributes] = line.split(';');
        const separator = pair.indexOf('=');
        const name = pair.slice(0, separator).trim();
        const value = pair.slice(separator + 1).trim();
        const expired = attributes.some((attribute) => /^\s*expires=Thu, 01 Jan 1970/i.test(attribute));
        if (value === '' || expired) this.providerCookies.delete(name);
        else this.providerCookies.set(name, value);
      }
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || !location) return { returnTo: undefined, url: next, status: response.status, body: await response.text() };
      await response.body?.cancel();
      next = new URL(location, next);
      if (next.origin === publicOrigin) return { returnTo: next, url: next, status: response.status, body: '' };
    }
    assert.fail(`too many redirects at the provider, last ${next.href}`);
  }
}

function cookieHeader(cookies: Map<string, string>): string {
  return [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
}

/** The Location of a redirect answer, asserting its status. */
export function redirectTarget(response: LightMyRequestResponse, status: number): URL {
  assert.equal(response.statusCode, status, response.body);
  const location = response.headers.location;
  assert.equal(typeof location, 'string');
  return new URL(location as string);
}
