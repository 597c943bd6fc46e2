import assert from 'node:assert/strict';
import http from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { Device } from '../../src/client/index.ts';
import { t } from '../../web/src/i18n.ts';
import { browserUnavailable, launchBrowser, newPage, sendOsmAnd, signInOnPage, startWebServer } from '../support/browser.ts';
import type { WebServer } from '../support/browser.ts';

const unavailable = browserUnavailable();
const password = 'Correct-Horse-9';

/** Creates a device from the page with its cookie, as the app's own requests do: a cookie-authenticated change. */
async function createDeviceFromPage(page: Page, uniqueId: string): Promise<number> {
  return page.evaluate(async (id) => {
    const response = await fetch('/api/devices', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: id, uniqueId: id }) });
    return response.status;
  }, uniqueId);
}

/** What reached the server of a request: its Origin and whether the session cookie came with it. */
interface Seen {
  url: string;
  origin: string | undefined;
  withCookie: boolean;
}

function seenOf(request: IncomingMessage): Seen {
  return { url: request.url ?? '', origin: request.headers.origin, withCookie: /\baccess_token=/.test(request.headers.cookie ?? '') };
}

/**
 * `npm start` prints http://127.0.0.1:8080/ while PUBLIC_URL defaults to http://localhost:8080: the
 * app must work at either name, whichever PUBLIC_URL names, with the live map connected.
 */
for (const [publicHost, openedAt] of [['127.0.0.1', 'localhost'], ['localhost', '127.0.0.1']] as const) {
  describe(`web app: opened at ${openedAt} while PUBLIC_URL names ${publicHost}`, { skip: unavailable }, () => {
    let web: WebServer;
    let browser: Browser;
    let page: Page;
    /** Where the person opened the app: the same server under its other name. */
    let appUrl: string;
    const email = `first-screen-${openedAt}@example.com`;
    const uniqueId = `first-screen-${openedAt}`;

    before(async () => {
      web = await startWebServer({}, { publicHost });
      appUrl = web.url.replace(publicHost, openedAt);
      browser = await launchBrowser();
      await web.server.auth!.api.accounts.create({ email, password, name: 'First', emailVerified: true });
      ({ page } = await newPage(browser));
      await signInOnPage(page, { ...web, url: appUrl }, email, password);
      await page.getByRole('heading', { name: t.map.emptyTitle }).waitFor();
    });

    after(async () => {
      await browser?.close();
      await web?.close();
    });

    it('connects the live map, takes changes, and shows a position the moment a device sends it', async () => {
      assert.equal(new URL(page.url()).hostname, openedAt);
      assert.equal(await createDeviceFromPage(page, uniqueId), 201, 'a change with the cookie from this host');
      await page.reload();
      await page.getByRole('status').filter({ hasText: t.map.live.open as string }).waitFor();
      const row = page.getByRole('button', { name: new RegExp(`${uniqueId}.*${t.map.noPosition}`) });
      await row.waitFor();

      await sendOsmAnd(web, { id: uniqueId, lat: 48.8566, lon: 2.3522 });
      await page.getByRole('button', { name: new RegExp(`${uniqueId}.*${t.status.online}`) }).waitFor();
      assert.equal(await page.getByRole('status').filter({ hasText: t.map.live.open as string }).count(), 1, 'the socket stayed open');
      const devices = await page.evaluate(async () => (await fetch('/api/devices')).json() as Promise<Device[]>);
      assert.deepEqual(devices.map((device) => [device.uniqueId, device.status]), [[uniqueId, 'online']]);
    });

    it('lands on the map, not a blank page, when ?next= names another origin; follows a path of the app', async () => {
      for (const next of ['https://evil.example/', '//evil.example/x', '/\\evil.example', 'javascript:alert(1)', 'http://[']) {
        await page.goto(`${appUrl}/login?next=${encodeURIComponent(next)}`);
        await page.waitForURL(`${appUrl}/`);
        await page.getByRole('heading', { name: t.map.devices }).waitFor();
      }
      await page.goto(`${appUrl}/login?next=${encodeURIComponent('/events?type=deviceOnline#top')}`);
      await page.waitForURL(`${appUrl}/events?type=deviceOnline#top`);
    });

    it('refuses the cookie to a page of another site on this machine: no live socket, no change', async () => {
      // Another program's page, at this host name on another port: the same site, so the browser sends our cookie.
      const seen: Seen[] = [];
      const observe = (request: IncomingMessage) => seen.push(seenOf(request));
      web.server.app.server.prependListener('upgrade', observe);
      web.server.app.server.prependListener('request', observe);
      const target = new URL(appUrl);
      const foreign = http.createServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><title>other</title><script>
          window.outcome = new Promise((resolve) => {
            const socket = new WebSocket('ws://${target.host}/api/socket');
            socket.onopen = () => resolve('open');
            socket.onclose = () => resolve('closed');
          });
          // No preflight for text/plain: the request reaches the server, with the cookie.
          window.change = fetch('http://${target.host}/api/devices', { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: '{"name":"forged","uniqueId":"forged-0001"}' }).then(() => 'sent');
        </script>`);
      });
      await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.1', resolve));
      try {
        const foreignOrigin = `http://${openedAt}:${(foreign.address() as AddressInfo).port}`;
        const other = await browser.contexts()[0]!.newPage();
        await other.goto(`${foreignOrigin}/`);
        assert.equal(await other.evaluate(() => (globalThis as unknown as { outcome: Promise<string> }).outcome), 'closed');
        assert.equal(await other.evaluate(() => (globalThis as unknown as { change: Promise<string> }).change), 'sent');
        const fromForeign = seen.filter((request) => request.origin === foreignOrigin).map((request) => [request.url, request.withCookie]);
        assert.deepEqual(fromForeign.sort(), [['/api/devices', true], ['/api/socket', true]], 'both reached the server with the cookie');
        await other.close();
      } finally {
        web.server.app.server.removeListener('upgrade', observe);
        web.server.app.server.removeListener('request', observe);
        foreign.close();
      }
      const devices = await page.evaluate(async () => (await fetch('/api/devices')).json() as Promise<Device[]>);
      assert.deepEqual(devices.map((device) => device.uniqueId), [uniqueId], 'nothing was created');
      await page.goto(`${appUrl}/`);
      await page.getByRole('status').filter({ hasText: t.map.live.open as string }).waitFor();
    });
  });
}
