import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { t } from '../../web/src/i18n.ts';
import { browserUnavailable, launchBrowser, newPage, startWebServer } from '../support/browser.ts';
import type { WebServer } from '../support/browser.ts';

const unavailable = browserUnavailable();

interface Manifest {
  name: string;
  short_name: string;
  start_url: string;
  display: string;
  icons: { src: string; sizes: string; type: string; purpose?: string }[];
}

describe('web app: installable, with an offline shell', { skip: unavailable }, () => {
  let web: WebServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  before(async () => {
    web = await startWebServer();
    browser = await launchBrowser();
    ({ context, page } = await newPage(browser));
  });

  after(async () => {
    await browser?.close();
    await web?.close();
  });

  it('links a valid manifest whose icons are the PNGs it names, and Chromium finds the app installable', async () => {
    await page.goto(`${web.url}/login`);
    await page.getByRole('heading', { name: t.signIn.title }).waitFor();
    const href = await page.locator('link[rel="manifest"]').getAttribute('href');
    assert.equal(href, '/manifest.webmanifest');
    const response = await fetch(`${web.url}${href}`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^application\/manifest\+json/);
    const manifest = (await response.json()) as Manifest;
    assert.equal(manifest.name, t.appName);
    assert.equal(manifest.start_url, '/');
    assert.equal(manifest.display, 'standalone');
    for (const size of [192, 512]) {
      const icon = manifest.icons.find((candidate) => candidate.sizes === `${size}x${size}` && candidate.purpose === 'any');
      assert.ok(icon, `a ${size} px icon`);
      const file = await fetch(`${web.url}${icon.src}`);
      assert.equal(file.headers.get('content-type'), 'image/png');
      const png = PNG.sync.read(Buffer.from(await file.arrayBuffer()));
      assert.deepEqual([png.width, png.height], [size, size], icon.src);
    }
    assert.ok(manifest.icons.some((icon) => icon.purpose === 'maskable'), 'a maskable icon');
    const session = await context.newCDPSession(page);
    await page.evaluate(() => (globalThis as unknown as { navigator: { serviceWorker: { ready: Promise<unknown> } } }).navigator.serviceWorker.ready);
    const { errors } = (await session.send('Page.getAppManifest')) as { errors: { message: string }[] };
    assert.deepEqual(errors, [], 'Chromium reads the manifest without a complaint');
    const { installabilityErrors } = (await session.send('Page.getInstallabilityErrors')) as { installabilityErrors: { errorId: string }[] };
    // A test context is a private window, where Chromium never offers to install; nothing else stands in the way.
    assert.deepEqual(installabilityErrors.map((error) => error.errorId).filter((id) => id !== 'in-incognito'), []);
  });

  it('opens offline from the service worker: the shell, its scripts and styles, at any address of the app', async () => {
    // The worker has cached the shell once it is active (install waits for the cache).
    await page.goto(`${web.url}/login`);
    await page.waitForFunction(() => (globalThis as unknown as { navigator: { serviceWorker: { controller: unknown } } }).navigator.serviceWorker.controller !== null);
    const cached = await page.evaluate(async () => {
      const scope = globalThis as unknown as { caches: { keys(): Promise<string[]>; open(name: string): Promise<{ keys(): Promise<{ url: string }[]> }> } };
      const [name] = await scope.caches.keys();
      return name ? (await (await scope.caches.open(name)).keys()).map((request) => new URL(request.url).pathname) : [];
    });
    assert.ok(cached.includes('/'), `the page is cached: ${cached.join(', ')}`);
    assert.ok(cached.some((path) => /^\/assets\/.*\.js$/.test(path)) && cached.some((path) => /^\/assets\/.*\.css$/.test(path)), `its scripts and styles: ${cached.join(', ')}`);

    await context.setOffline(true);
    try {
      await page.reload();
      await page.getByRole('heading', { name: t.signIn.title }).waitFor();
      assert.equal(await page.getByLabel(t.fields.email).isVisible(), true);
      await page.goto(`${web.url}/register`);
      await page.getByRole('heading', { name: t.register.title }).waitFor();
      // The server is out of reach, not the page: fetch fails.
      const api = await page.evaluate(() => fetch('/api/auth/legal/terms').then(() => 'answered', () => 'failed'));
      assert.equal(api, 'failed');
    } finally {
      await context.setOffline(false);
    }
  });
});
