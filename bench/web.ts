import lighthouse from 'lighthouse';
import type { Page } from 'playwright-core';
import { browserUnavailable, launchBrowser, newPage, sendOsmAnd, signInOnPage, startWebServer } from '../test/support/browser.ts';
import type { WebServer } from '../test/support/browser.ts';
import { freePort } from '../test/support/ports.ts';
import { buildIfStale, initialBundle } from '../web/build.ts';
import type { Figure } from './measure.ts';

const DEVICES = Number(process.env.BENCH_WEB_DEVICES ?? 1000);
const UPDATE_SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const PASSWORD = 'Bench-Password-1';
const CITY = { lat: 48.85, lon: 2.35 };
/** The Lighthouse categories the web app is held to, and the score it must reach in each. */
const LIGHTHOUSE_CATEGORIES = ['accessibility', 'best-practices'] as const;
const LIGHTHOUSE_TARGET = 95;

/** Positions of every device at once, `concurrency` requests in flight, over OsmAnd as devices send them. */
async function reportAll(web: WebServer, round: number, concurrency = 32): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < DEVICES; i = next++) {
      const angle = (i * 2.39996 + round * 0.01) % (2 * Math.PI);
      const radius = 0.2 * Math.sqrt(i / DEVICES);
      await sendOsmAnd(web, { id: `bench-web-${i}`, lat: CITY.lat + radius * Math.sin(angle), lon: CITY.lon + radius * Math.cos(angle), speed: 20 });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** The frame intervals recorded so far, sorted, after waiting `ms`. */
async function frameIntervals(page: Page, ms: number): Promise<number[]> {
  await new Promise((resolve) => setTimeout(resolve, ms));
  return (await page.evaluate(() => (globalThis as unknown as { frameIntervals: number[] }).frameIntervals)).sort((a, b) => a - b);
}

/**
 * The map page on the blank style (DESIGN §8): the initial download, the time from pressing
 * "Sign in" to the first device marker, and frame intervals while every device reports once a
 * second. Chromium runs on this machine beside the server and the load, so the frame figures are
 * for comparing runs, not a promise for a user's machine. Then Lighthouse's accessibility and
 * best-practice scores of the sign-in page and the signed-in screens.
 */
export async function benchWeb(): Promise<Figure[]> {
  await buildIfStale();
  const bundle = initialBundle();
  const figures: Figure[] = [
    { name: 'initial JS and CSS, gzip (target <= 250 KB)', value: `${(bundle.gzipBytes / 1024).toFixed(1)} KB` },
    { name: 'MapLibre chunk, gzip (map screens only)', value: `${(bundle.mapChunkGzipBytes / 1024).toFixed(1)} KB` },
  ];
  const unavailable = browserUnavailable();
  if (unavailable) return [...figures, { name: 'map page in Chromium', value: `skipped: ${unavailable}` }];

  const web = await startWebServer();
  const browser = await launchBrowser();
  try {
    const email = 'bench-web@example.com';
    await web.server.auth?.api.accounts.create({ email, password: PASSWORD, emailVerified: true });
    const owner = await web.server.login({ email });
    const deviceIds: number[] = [];
    for (let i = 0; i < DEVICES; i++) {
      const created = await web.server.app.inject({ method: 'POST', url: '/api/devices', headers: owner.authorization, payload: { name: `Van ${i}`, uniqueId: `bench-web-${i}` } });
      if (created.statusCode !== 201) throw new Error(`creating device ${i}: ${created.body}`);
      deviceIds.push(created.json<{ id: number }>().id);
    }
    await reportAll(web, 0);

    const { context, page } = await newPage(browser);
    page.setDefaultTimeout(60_000);
    const started = Date.now();
    await signInOnPage(page, web, email, PASSWORD);
    await page.locator('.cluster-count').first().waitFor();
    figures.push({ name: `sign-in to first marker, ${DEVICES} devices`, value: `${Date.now() - started} ms` });

    await page.evaluate(() => {
      const scope = globalThis as unknown as {
        frameIntervals: number[];
        longTaskMs: number;
        requestAnimationFrame(callback: (time: number) => void): number;
        PerformanceObserver: new (callback: (list: { getEntries(): { duration: number }[] }) => void) => { observe(options: object): void };
      };
      scope.frameIntervals = [];
      scope.longTaskMs = 0;
      // Tasks over 50 ms on the page's main thread: the page's own work, apart from a starved machine.
      new scope.PerformanceObserver((list) => {
        for (const entry of list.getEntries()) scope.longTaskMs += entry.duration;
      }).observe({ type: 'longtask', buffered: false });
      let last = 0;
      const tick = (time: number) => {
        if (last > 0) scope.frameIntervals.push(time - last);
        last = time;
        scope.requestAnimationFrame(tick);
      };
      scope.requestAnimationFrame(tick);
    });
    // The same page with nothing arriving: software WebGL on a shared machine sets a floor of its own.
    const idle = await frameIntervals(page, 3000);
    await page.evaluate(() => {
      const scope = globalThis as unknown as { frameIntervals: number[]; longTaskMs: number };
      scope.frameIntervals = [];
      scope.longTaskMs = 0;
    });
    const updating = Date.now();
    for (let round = 1; round <= UPDATE_SECONDS; round++) {
      const second = Date.now();
      await reportAll(web, round);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1000 - (Date.now() - second))));
    }
    const elapsedMs = Date.now() - updating;
    const rate = (DEVICES * UPDATE_SECONDS) / (elapsedMs / 1000);
    const longTaskMs = await page.evaluate(() => (globalThis as unknown as { longTaskMs: number }).longTaskMs);
    const intervals = await frameIntervals(page, 0);
    const at = (share: number) => intervals[Math.min(intervals.length - 1, Math.floor(share * intervals.length))] ?? 0;
    figures.push(
      { name: 'frame interval with nothing arriving, p50', value: `${(idle[Math.floor(idle.length / 2)] ?? 0).toFixed(1)} ms` },
      { name: 'positions reaching the server (target 1 per device per second)', value: `${rate.toFixed(0)}/s` },
      { name: `frame interval while ${DEVICES} devices report, p50`, value: `${at(0.5).toFixed(1)} ms` },
      { name: '  p95', value: `${at(0.95).toFixed(1)} ms` },
      { name: '  longest', value: `${(intervals.at(-1) ?? 0).toFixed(1)} ms` },
      { name: "  share of the time in the page's long tasks", value: `${((100 * longTaskMs) / elapsedMs).toFixed(0)} %` },
    );
    await context.close();
    figures.push(...(await lighthouseFigures(web, email, deviceIds[0] as number)));
  } finally {
    await browser.close();
    await web.close();
  }
  return figures;
}

/**
 * The cookies POST /api/auth/login sets, for Chromium's cookie jar as a browser keeps them. Each
 * expires as Max-Age says: a session cookie would go with the last tab of the context, and
 * Lighthouse closes its tab after every page.
 */
async function sessionCookies(web: WebServer, email: string): Promise<{ name: string; value: string; url: string; path: string; httpOnly: boolean; expires: number }[]> {
  const response = await fetch(`${web.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: PASSWORD }) });
  if (response.status !== 200) throw new Error(`signing in for Lighthouse: ${response.status} ${await response.text()}`);
  return response.headers.getSetCookie().map((header) => {
    const [pair = '', ...attributes] = header.split(';').map((part) => part.trim());
    const attribute = (name: string) => attributes.find((candidate) => candidate.toLowerCase().startsWith(`${name}=`))?.slice(name.length + 1);
    const eq = pair.indexOf('=');
    return {
      name: pair.slice(0, eq),
      value: pair.slice(eq + 1),
      url: web.url,
      path: attribute('path') ?? '/',
      httpOnly: attributes.some((candidate) => candidate.toLowerCase() === 'httponly'),
      expires: Date.now() / 1000 + Number(attribute('max-age') ?? 3600),
    };
  });
}

/**
 * Lighthouse's accessibility and best-practice scores of the sign-in page, signed out, then of the
 * signed-in screens. For those the session's cookies go into Chromium's jar, as signing in leaves
 * them, and Lighthouse keeps its hands off storage: the page reads the script-readable signed_in
 * cookie, which a Cookie header added to requests would not give it.
 */
async function lighthouseFigures(web: WebServer, email: string, deviceId: number): Promise<Figure[]> {
  const port = await freePort();
  const browser = await launchBrowser([`--remote-debugging-port=${port}`]);
  const pages = [
    { path: '/login', label: '/login', signedIn: false },
    { path: '/', label: '/', signedIn: true },
    { path: `/devices/${deviceId}`, label: '/devices/:id', signedIn: true },
    ...['/geofences', '/events', '/notifications', '/plan', '/account'].map((path) => ({ path, label: path, signedIn: true })),
  ];
  const figures: Figure[] = [];
  try {
    let signedIn = false;
    for (const page of pages) {
      if (page.signedIn && !signedIn) {
        // Lighthouse opens its tabs in the browser's default context, which only the protocol reaches.
        const session = await browser.newBrowserCDPSession();
        await session.send('Storage.setCookies', { cookies: await sessionCookies(web, email) });
        signedIn = true;
      }
      const result = await lighthouse(`${web.url}${page.path}`, {
        port,
        logLevel: 'error',
        output: 'json',
        onlyCategories: [...LIGHTHOUSE_CATEGORIES],
        // The requests, to check the signed-in screens really were.
        onlyAudits: ['network-requests'],
        disableStorageReset: page.signedIn,
        // Neither category depends on the network's speed: no simulated slow phone.
        throttlingMethod: 'provided',
      });
      if (!result) throw new Error(`Lighthouse returned nothing for ${page.path}`);
      const { lhr } = result;
      const requests = (lhr.audits['network-requests']?.details as { items?: { url: string; statusCode: number }[] } | undefined)?.items ?? [];
      const profile = requests.find((request) => new URL(request.url).pathname === '/api/auth/profile');
      if (page.signedIn && profile?.statusCode !== 200) throw new Error(`Lighthouse saw ${page.path} signed out: GET /api/auth/profile answered ${profile?.statusCode ?? 'nothing'}`);
      const scores = LIGHTHOUSE_CATEGORIES.map((id) => Math.round(100 * (lhr.categories[id]?.score ?? 0)));
      const failing = LIGHTHOUSE_CATEGORIES.flatMap((id, index) => {
        if ((scores[index] ?? 0) >= LIGHTHOUSE_TARGET) return [];
        return (lhr.categories[id]?.auditRefs ?? []).filter((ref) => ref.weight > 0 && (lhr.audits[ref.id]?.score ?? 1) < 1).map((ref) => ref.id);
      });
      figures.push({
        name: `Lighthouse ${page.label} accessibility / best practices (target >= ${LIGHTHOUSE_TARGET})`,
        value: `${scores.join(' / ')}${failing.length > 0 ? ` failing: ${failing.join(', ')}` : ''}`,
      });
    }
  } finally {
    await browser.close();
  }
  return figures;
}
