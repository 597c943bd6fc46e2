import { browserUnavailable, launchBrowser, newPage, sendOsmAnd, signInOnPage, startWebServer } from '../test/support/browser.ts';
import type { WebServer } from '../test/support/browser.ts';
import type { Page } from 'playwright-core';
import { buildIfStale, initialBundle } from '../web/build.ts';
import type { Figure } from './measure.ts';

const DEVICES = Number(process.env.BENCH_WEB_DEVICES ?? 1000);
const UPDATE_SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const PASSWORD = 'Bench-Password-1';
const CITY = { lat: 48.85, lon: 2.35 };

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
 * for comparing runs, not a promise for a user's machine.
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
    for (let i = 0; i < DEVICES; i++) {
      const created = await web.server.app.inject({ method: 'POST', url: '/api/devices', headers: owner.authorization, payload: { name: `Van ${i}`, uniqueId: `bench-web-${i}` } });
      if (created.statusCode !== 201) throw new Error(`creating device ${i}: ${created.body}`);
    }
    await reportAll(web, 0);

    const { page } = await newPage(browser);
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
  } finally {
    await browser.close();
    await web.close();
  }
  return figures;
}
