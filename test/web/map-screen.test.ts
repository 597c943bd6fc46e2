import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { runSimulation } from '../../src/cli/simulate.ts';
import type { Device, DeviceStatus } from '../../src/client/index.ts';
import { errorWords, t } from '../../web/src/i18n.ts';
import { browserUnavailable, captureScreen, launchBrowser, newPage, sendOsmAnd, signInOnPage, startWebServer } from '../support/browser.ts';
import type { WebServer } from '../support/browser.ts';
import { eventually } from '../support/eventually.ts';

const unavailable = browserUnavailable();
const password = 'Correct-Horse-9';
/** Seconds without data before an online device turns unknown: short, so the test sees it happen. */
const STATUS_TIMEOUT = 4;
/** Three vans about a kilometre apart, the last inside the first two's bounds (the map fits them): three markers, never a cluster. */
const VANS = [
  { name: 'Parked van', uniqueId: '860000000008001', at: { lat: 48.85, lon: 2.34 } },
  { name: 'Quiet van', uniqueId: 'quiet-van', at: { lat: 48.86, lon: 2.35 } },
  { name: 'Moving van', uniqueId: 'moving-van', at: { lat: 48.85, lon: 2.35 } },
] as const;

/**
 * The map canvas's pixels of each status colour (styles.css's --online, --offline, --unknown),
 * counted in the composited screenshot: WebGL draws the markers, so what a person sees is the only
 * place their colour can be read.
 */
async function markerPixels(page: Page): Promise<Record<DeviceStatus, number>> {
  const colours = await page.evaluate<Record<DeviceStatus, string>>(
    "Object.fromEntries(['online', 'offline', 'unknown'].map((status) => [status, getComputedStyle(document.documentElement).getPropertyValue('--' + status).trim()]))",
  );
  const { data } = PNG.sync.read(await page.locator('.map-canvas').screenshot());
  const counts: Record<DeviceStatus, number> = { online: 0, offline: 0, unknown: 0 };
  const wanted = Object.entries(colours).map(([status, hex]) => [status as DeviceStatus, [1, 3, 5].map((start) => parseInt(hex.slice(start, start + 2), 16))] as const);
  for (let offset = 0; offset < data.length; offset += 4) {
    for (const [status, rgb] of wanted) {
      if (rgb.every((channel, index) => Math.abs(channel - (data[offset + index] as number)) <= 8)) counts[status]++;
    }
  }
  return counts;
}

/** The marker pixels once `drawn` holds of them (the map draws a frame or more after it says it is ready), or after 10 s. */
async function markerPixelsOnce(page: Page, drawn: (counts: Record<DeviceStatus, number>) => boolean): Promise<Record<DeviceStatus, number>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const counts = await markerPixels(page);
    if (drawn(counts) || Date.now() > deadline) return counts;
    await page.waitForTimeout(200);
  }
}

describe('web app: the map screen while it loads, when it fails, and its markers', { skip: unavailable }, () => {
  let web: WebServer;
  let browser: Browser;
  let page: Page;
  let gt06Port: number;
  let devices: () => Promise<Device[]>;

  before(async () => {
    web = await startWebServer({ STATUS_TIMEOUT: String(STATUS_TIMEOUT) });
    gt06Port = await web.server.tracking!.ingestion.listen('gt06', 0);
    await web.server.auth!.api.accounts.create({ email: 'fleet@example.com', password, name: 'Fleet', emailVerified: true });
    const fleet = await web.server.login({ email: 'fleet@example.com' });
    for (const van of VANS) {
      const created = await web.server.app.inject({ method: 'POST', url: '/api/devices/', headers: fleet.authorization, payload: { name: van.name, uniqueId: van.uniqueId } });
      assert.equal(created.statusCode, 201, created.body);
    }
    devices = async () => (await web.server.app.inject({ method: 'GET', url: '/api/devices', headers: fleet.authorization })).json() as Device[];
    browser = await launchBrowser();
    ({ page } = await newPage(browser));
  });

  after(async () => {
    await browser?.close();
    await web?.close();
  });

  const deviceNamed = async (name: string) => (await devices()).find((device) => device.name === name);
  const statusOf = async (name: string) => (await deviceNamed(name))?.status;

  it('draws each device in its status colour, and recolours it live when the status changes', async () => {
    const [parked, quiet, moving] = VANS;
    // Parked: a GT06 tracker reports, then its connection closes, so it is offline.
    const stop = new AbortController();
    const simulation = runSimulation({ protocol: 'gt06', host: '127.0.0.1', port: gt06Port, uniqueIds: [parked.uniqueId], rate: 1, route: [parked.at, parked.at], speedKmh: 1, stopSeconds: 60, signal: stop.signal });
    try {
      await eventually(async () => typeof (await deviceNamed(parked.name))?.positionId === 'number', 'the GT06 tracker reported a position', 15_000);
    } finally {
      stop.abort();
    }
    await simulation;
    await eventually(async () => (await statusOf(parked.name)) === 'offline', 'the closed connection made the tracker offline', 5000);
    // Quiet: one report over OsmAnd, then silence past STATUS_TIMEOUT, so it is unknown.
    await sendOsmAnd(web, { id: quiet.uniqueId, ...quiet.at });
    await eventually(async () => (await statusOf(quiet.name)) === 'unknown', 'the silent phone turned unknown', (STATUS_TIMEOUT + 5) * 1000);

    await signInOnPage(page, web, 'fleet@example.com', password);
    await page.locator('.map-canvas[data-state="ready"]').waitFor();
    const row = (name: string, status: DeviceStatus) => page.getByRole('list', { name: t.map.devices }).getByRole('button', { name: new RegExp(`${name}.*${t.status[status]}`) });
    await row(parked.name, 'offline').waitFor();
    await row(quiet.name, 'unknown').waitFor();
    const twoMarkers = await markerPixelsOnce(page, (counts) => counts.offline > 40 && counts.unknown > 40);
    assert.ok(twoMarkers.offline > 40, `the offline van's marker is drawn grey: ${JSON.stringify(twoMarkers)}`);
    assert.ok(twoMarkers.unknown > 40, `the silent phone's marker is drawn amber: ${JSON.stringify(twoMarkers)}`);
    assert.ok(twoMarkers.online < 5, `no device is online, so no marker is green: ${JSON.stringify(twoMarkers)}`);

    // Moving reports, and the quiet phone speaks again: both markers turn green without a reload.
    await sendOsmAnd(web, { id: moving.uniqueId, ...moving.at });
    await sendOsmAnd(web, { id: quiet.uniqueId, ...quiet.at, time: new Date(Date.now() + 1000) });
    await row(moving.name, 'online').waitFor();
    await row(quiet.name, 'online').waitFor();
    const live = await markerPixelsOnce(page, (counts) => counts.online > 2 * 40 && counts.unknown < 5);
    // Read while both are still online: STATUS_TIMEOUT is short.
    assert.equal(await statusOf(quiet.name), 'online');
    assert.ok(live.online > 2 * 40, `two markers are green: ${JSON.stringify(live)}`);
    assert.ok(live.unknown < 5, `no marker is amber any more: ${JSON.stringify(live)}`);
    assert.ok(Math.abs(live.offline - twoMarkers.offline) < twoMarkers.offline / 4, `the offline van keeps its grey: ${JSON.stringify(live)}`);
  });

  it('says it is loading while the devices are on their way, and explains a failed load with a way to try again', async () => {
    const list = page.getByRole('list', { name: t.map.devices });
    const loading = page.getByRole('status').filter({ hasText: t.loading });
    // The device list is held back until the loading state has been looked at.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route('**/api/devices', async (route) => {
      await held;
      await route.continue();
    });
    await page.reload();
    await page.getByRole('heading', { level: 1, name: t.map.title }).waitFor();
    await loading.waitFor();
    assert.equal(await list.count(), 0, 'no list before the devices are in');
    await captureScreen(page, 'map-loading');
    release();
    await list.getByRole('button', { name: new RegExp(VANS[0].name) }).waitFor();
    // The map has a loading state of its own, until its library and style are in.
    await page.locator('.map-canvas[data-state="ready"]').waitFor();
    assert.equal(await loading.count(), 0, 'no loading state once the devices and the map are in');
    await page.unrouteAll();

    // The server cannot be reached: the query tries three times, then says so in words, with a way to retry.
    let attempts = 0;
    await page.route('**/api/devices', async (route) => {
      attempts++;
      await route.abort('connectionrefused');
    });
    await page.reload();
    const failed = page.getByRole('alert').filter({ hasText: errorWords.NETWORK as string });
    await failed.waitFor({ timeout: 15_000 });
    assert.equal(attempts, 3, 'the first try and two retries');
    await captureScreen(page, 'map-failed');
    await page.unrouteAll();
    await failed.getByRole('button', { name: t.retry }).click();
    await list.getByRole('button', { name: new RegExp(VANS[0].name) }).waitFor();
    assert.equal(await failed.count(), 0);

    // The account itself cannot be read: the whole screen says so, under a heading, and recovers on retry.
    await page.route('**/api/auth/profile', (route) => route.abort('connectionrefused'));
    await page.reload();
    await page.getByRole('heading', { level: 1, name: t.unavailable }).waitFor();
    await page.getByRole('alert').filter({ hasText: errorWords.NETWORK as string }).waitFor();
    await captureScreen(page, 'app-unavailable');
    await page.unrouteAll();
    await page.getByRole('button', { name: t.retry }).click();
    await list.getByRole('button', { name: new RegExp(VANS[0].name) }).waitFor();
  });
  it('keeps one map across screens, and each screen leaves it bare for the next', async () => {
    /** The map's layers and sources beyond the blank test style's one background layer, as its element counts them. */
    const drawn = async () => {
      const instance = page.locator('.map-canvas .map-instance');
      const [layers, sources] = await Promise.all([instance.getAttribute('data-layers'), instance.getAttribute('data-sources')]);
      return { layers: Number(layers) - 1, sources: Number(sources) };
    };
    const sameCanvas = () => page.evaluate('document.querySelector(".maplibregl-canvas") === window.firstCanvas');
    await page.goto(`${web.url}/`);
    await page.locator('.map-canvas[data-state="ready"]').waitFor();
    await page.evaluate('window.firstCanvas = document.querySelector(".maplibregl-canvas")');
    // The fleet: one clustered source, its cluster and device layers.
    assert.deepEqual(await drawn(), { layers: 2, sources: 1 });
    assert.ok((await markerPixelsOnce(page, (counts) => counts.offline > 40)).offline > 40, 'the markers are drawn');

    await page.getByRole('link', { name: t.nav.geofences }).click();
    await page.getByRole('heading', { level: 1, name: t.geofences.title }).waitFor();
    await page.locator('.map-canvas[data-state="ready"]').waitFor();
    // Saved areas (fill, outline), the devices, the draft (fill, outline, midpoints, corners); nothing of the fleet screen.
    assert.deepEqual(await drawn(), { layers: 7, sources: 3 });
    assert.equal(await sameCanvas(), true, 'the same map, moved into the geofences screen');
    assert.equal(await page.locator('.maplibregl-canvas').count(), 1);

    await page.getByRole('link', { name: t.nav.map }).click();
    await page.getByRole('list', { name: t.map.devices }).getByRole('button', { name: new RegExp(VANS[0].name) }).click();
    await page.getByRole('link', { name: t.device.history }).click();
    await page.locator('.history-map .map-canvas[data-state="ready"]').waitFor();
    // The route and the playback's point.
    assert.deepEqual(await drawn(), { layers: 2, sources: 2 });
    assert.equal(await sameCanvas(), true, 'the same map, in the history screen');

    await page.getByRole('link', { name: t.nav.map }).click();
    await page.getByRole('list', { name: t.map.devices }).waitFor();
    assert.deepEqual(await drawn(), { layers: 2, sources: 1 });
    assert.equal(await sameCanvas(), true, 'the same map, back on the fleet screen');
    assert.ok((await markerPixelsOnce(page, (counts) => counts.offline > 40)).offline > 40, 'the markers are drawn again on the second visit');
  });

  it('shows a screen that fails as a message with a retry and a way to the map, the navigation still working', async () => {
    // A devices list the screen cannot read makes it throw while rendering.
    await page.route('**/api/devices', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: '{}' }));
    await page.goto(`${web.url}/`);
    await page.getByRole('heading', { level: 1, name: t.screenError.title }).waitFor();
    await page.getByRole('alert').filter({ hasText: t.screenError.body }).waitFor();
    await captureScreen(page, 'screen-error');
    // Elsewhere works, and the broken screen's error does not follow.
    await page.getByRole('link', { name: t.nav.geofences }).click();
    await page.getByRole('heading', { level: 1, name: t.geofences.title }).waitFor();
    assert.equal(await page.getByRole('heading', { name: t.screenError.title }).count(), 0);
    await page.getByRole('link', { name: t.nav.map }).click();
    await page.getByRole('heading', { level: 1, name: t.screenError.title }).waitFor();

    // Once the server answers well, "Try again" reads the devices afresh and shows the screen.
    await page.unrouteAll();
    await page.getByRole('button', { name: t.retry }).click();
    await page.getByRole('list', { name: t.map.devices }).getByRole('button', { name: new RegExp(VANS[0].name) }).waitFor();
    assert.equal(await page.getByRole('heading', { name: t.screenError.title }).count(), 0);

    // And the way to the map from another screen's failure.
    await page.route('**/api/geofences', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: '{}' }));
    await page.getByRole('link', { name: t.nav.geofences }).click();
    await page.getByRole('heading', { level: 1, name: t.screenError.title }).waitFor();
    await page.getByRole('link', { name: t.screenError.home }).click();
    await page.getByRole('list', { name: t.map.devices }).waitFor();
    await page.unrouteAll();
  });
});

describe('web app: the map when every tile fails to load', { skip: unavailable }, () => {
  let web: WebServer;
  let browser: Browser;

  before(async () => {
    // The style npm start serves by default, whose tiles come from the network.
    web = await startWebServer({ MAP_STYLE_URL: '/map-styles/osm.json' });
    await web.server.auth!.api.accounts.create({ email: 'offline@example.com', password, name: 'Offline', emailVerified: true });
    const owner = await web.server.login({ email: 'offline@example.com' });
    const created = await web.server.app.inject({ method: 'POST', url: '/api/devices/', headers: owner.authorization, payload: { name: 'Offline van', uniqueId: 'offline-van' } });
    assert.equal(created.statusCode, 201, created.body);
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await web?.close();
  });

  it('still shows the map, as on a machine without a network: a tile that fails does not take the map down', async () => {
    const { page } = await newPage(browser);
    let refusedTiles = 0;
    await page.route('https://tile.openstreetmap.org/**', (route) => {
      refusedTiles++;
      return route.abort('internetdisconnected');
    });
    await signInOnPage(page, web, 'offline@example.com', password);
    await page.locator('.map-canvas[data-state="ready"]').waitFor();
    assert.ok(refusedTiles > 0, 'the map asked for tiles');
    assert.equal(await page.getByRole('alert').filter({ hasText: t.map.mapUnavailable }).count(), 0);
    // Not silently grey: the page says the background is missing and names the setting to check.
    await page.getByRole('status').filter({ hasText: 'MAP_STYLE_URL' }).waitFor();
    await page.getByRole('button', { name: /Offline van/ }).waitFor();
    // The style's credits (an OpenStreetMap link) pass axe in both themes, at both widths.
    const credits = page.getByRole('link', { name: 'OpenStreetMap' });
    if (!(await credits.isVisible())) await page.locator('.maplibregl-ctrl-attrib-button').click();
    await credits.waitFor();
    await captureScreen(page, 'map-tiles-failed');
  });
});
