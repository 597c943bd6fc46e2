import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { runSimulation } from '../../src/cli/simulate.ts';
import type { Device, Geofence } from '../../src/client/index.ts';
import { errorWords, t } from '../../web/src/i18n.ts';
import { assertAccessible, browserUnavailable, captureScreen, launchBrowser, newPage, qrCodeVideo, sendOsmAnd, signInOnPage, startWebServer } from '../support/browser.ts';
import type { WebServer } from '../support/browser.ts';

const unavailable = browserUnavailable();

const UNIQUE_ID = 'tracker-0001';
const DEPOT = { lat: 48.8566, lon: 2.3522 };
const password = 'Correct-Horse-9';

type LatLon = [number, number];

async function geofenceArea(page: Page, name: string): Promise<string> {
  const geofences = await page.evaluate(async () => (await fetch('/api/geofences')).json() as Promise<Geofence[]>);
  return geofences.find((geofence) => geofence.name === name)?.area ?? '';
}

/** Points at a handle on the map and waits for the cursor to show it can be dragged (the map draws handles a frame or two after a change). */
async function hoverHandle(page: Page, x: number, y: number): Promise<void> {
  const container = page.locator('.maplibregl-canvas-container');
  for (let attempt = 0; attempt < 20; attempt++) {
    await page.mouse.move(x + (attempt % 2), y);
    if (/cursor: move/.test((await container.getAttribute('style')) ?? '')) return;
    await page.waitForTimeout(100);
  }
  assert.fail(`no draggable handle at ${x}, ${y}`);
}

/** The centre (latitude first) and radius of a WKT circle. */
function circleOf(area: string): [LatLon, number] {
  const match = /^CIRCLE \((-?[\d.]+) (-?[\d.]+), (\d+)\)$/.exec(area);
  assert.ok(match, area);
  return [[Number(match[1]), Number(match[2])], Number(match[3])];
}

/** The ring of a WKT polygon, as stored: latitude first, the first point repeated last. */
function polygonRing(area: string): LatLon[] {
  return (/^POLYGON \(\((.*)\)\)$/.exec(area)?.[1] ?? '').split(', ').map((pair) => pair.split(' ').map(Number) as LatLon);
}


describe('web app: devices, live map, history, geofences', { skip: unavailable }, () => {
  let web: WebServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let claimToken: string;
  let deviceId: number;
  /** The positions the simulator's tracker reported, before the history is played. */
  let simulatedReports = 0;

  before(async () => {
    web = await startWebServer();
    browser = await launchBrowser();
    const auth = web.server.auth;
    assert.ok(auth);
    await auth.api.accounts.create({ email: 'owner@example.com', password, name: 'Owner', emailVerified: true });
    await auth.api.accounts.create({ email: 'admin@example.com', password, name: 'Admin', administrator: true, emailVerified: true });
    const admin = await web.server.login({ email: 'admin@example.com' });
    const created = await web.server.app.inject({
      method: 'POST',
      url: '/api/devices/claim-tokens',
      headers: admin.authorization,
      payload: { uniqueId: UNIQUE_ID, modelCode: 'pt-1', modelName: 'Pocket Tracker' },
    });
    assert.equal(created.statusCode, 201, created.body);
    claimToken = created.json().token;
    ({ context, page } = await newPage(browser));
    await signInOnPage(page, web, 'owner@example.com', password);
  });

  after(async () => {
    await browser?.close();
    await web?.close();
  });

  it('claims a device: the empty map leads to the claim screen, a wrong token is explained, the preview names the device', async () => {
    await page.getByRole('link', { name: t.map.emptyAction }).click();
    await page.getByRole('heading', { name: t.claim.title }).waitFor();
    await captureScreen(page, 'claim');
    await page.getByLabel(t.claim.token).fill('ZZZZ-ZZZZ-ZZZZ');
    await page.getByRole('button', { name: t.claim.check }).click();
    await page.getByText(t.claim.tokenErrors.TOKEN_INVALID as string).waitFor();
    await page.getByLabel(t.claim.token).fill(claimToken.toLowerCase());
    await page.getByRole('button', { name: t.claim.check }).click();
    await page.getByText('Pocket Tracker').waitFor();
    await page.getByText(UNIQUE_ID).waitFor();
    await captureScreen(page, 'claim-preview');
    await page.getByRole('button', { name: t.claim.submit }).click();
    await page.getByRole('link', { name: t.claim.open }).waitFor();
    await captureScreen(page, 'claimed');
    const devices = await page.evaluate(async () => (await fetch('/api/devices')).json() as Promise<Device[]>);
    assert.equal(devices.length, 1);
    assert.equal(devices[0]?.uniqueId, UNIQUE_ID);
    deviceId = devices[0]?.id as number;
  });

  it('shows a position the moment the simulator sends it over OsmAnd, and the device turns online', async () => {
    await page.getByRole('link', { name: t.nav.map }).click();
    const row = page.getByRole('button', { name: new RegExp(t.map.noPosition) });
    await row.waitFor();
    await page.getByText(t.map.live.open as string, { exact: true }).waitFor();
    // `npm run simulate`'s tracker, parked at the depot: a loop of a metre at walking pace.
    const depotLoop = [DEPOT, { lat: DEPOT.lat + 0.00001, lon: DEPOT.lon }];
    const stop = new AbortController();
    const simulation = runSimulation({ protocol: 'osmand', host: '127.0.0.1', port: web.osmandPort, uniqueIds: [UNIQUE_ID], rate: 1, route: depotLoop, speedKmh: 1, stopSeconds: 60, signal: stop.signal });
    try {
      await page.getByRole('button', { name: new RegExp(t.status.online) }).waitFor();
    } finally {
      // Its first report is in: the tracker stops, and the report in flight, if any, is still acknowledged.
      stop.abort();
    }
    const stats = await simulation;
    assert.equal(stats.refused, 0);
    simulatedReports = stats.acknowledged;
    await page.getByRole('button', { name: new RegExp(t.status.online) }).click();
    await page.getByRole('link', { name: t.map.details }).waitFor();
    await page.locator('.map-canvas[data-state="ready"]').waitFor();
    await captureScreen(page, 'map');
  });

  it('plays back the history with a track, a slider and a speed chart', async () => {
    const start = Date.now() - 20 * 60_000;
    for (let i = 0; i < 6; i++) {
      await sendOsmAnd(web, { id: UNIQUE_ID, lat: DEPOT.lat + i * 0.002, lon: DEPOT.lon + i * 0.001, speed: 10 + i * 5, time: new Date(start + i * 60_000) });
    }
    await page.goto(`${web.url}/devices/${deviceId}/history`);
    const points = 6 + simulatedReports;
    await page.getByText(t.history.points(points), { exact: false }).waitFor();
    const slider = page.getByLabel(t.history.slider);
    await slider.focus();
    await page.keyboard.press('End');
    assert.equal(await slider.inputValue(), String(points - 1));
    await page.getByRole('button', { name: t.history.play }).waitFor();
    await page.getByRole('img', { name: t.history.speedChart }).waitFor();
    await captureScreen(page, 'history');
  });

  it('shows the device page and saves an edit', async () => {
    await page.goto(`${web.url}/devices/${deviceId}`);
    await page.getByRole('heading', { name: t.device.details }).waitFor();
    await page.getByRole('button', { name: t.device.edit }).click();
    await page.getByLabel(t.device.name).fill('Delivery van');
    await page.getByRole('button', { name: t.save }).click();
    await page.getByRole('heading', { level: 1, name: 'Delivery van' }).waitFor();
    await page.getByLabel(t.device.attributeKey).fill('speedLimit');
    await page.getByLabel(t.device.attributeValue).fill('60');
    await page.getByRole('button', { name: t.device.addAttribute }).click();
    await page.getByText('speedLimit').waitFor();
    await page.getByLabel(t.device.shareWith).fill('not-an-address');
    await captureScreen(page, 'device');
    const device = await page.evaluate(async (id) => (await fetch(`/api/devices/${id}`)).json() as Promise<Device>, deviceId);
    assert.equal(device.name, 'Delivery van');
    assert.equal(device.attributes.speedLimit, 60);
  });

  it('draws a geofence on the map and shows the event the device raises entering it', async () => {
    await page.getByRole('link', { name: t.nav.geofences }).click();
    await page.locator('.map-canvas[data-state="ready"]').waitFor();
    await page.getByText(t.geofences.empty).waitFor();
    await page.getByRole('button', { name: t.geofences.new }).click();
    await page.getByLabel(t.fields.name).fill('Depot');
    // The map opens on the device, at the depot: a square around the middle of the map encloses it.
    const box = await page.locator('.map-canvas').boundingBox();
    assert.ok(box);
    const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
    for (const [dx, dy] of [[-80, -80], [80, -80], [80, 80], [-80, 80]] as const) await page.mouse.click(x + dx, y + dy);
    await page.getByText(t.geofences.points(4)).waitFor();
    await page.getByRole('button', { name: t.geofences.finish }).click();
    await captureScreen(page, 'geofence-draw');
    await page.getByRole('button', { name: t.geofences.create }).click();
    await page.getByRole('button', { name: `${t.edit} Depot` }).waitFor();
    await captureScreen(page, 'geofences');

    const geofences = await page.evaluate(async () => (await fetch('/api/geofences')).json() as Promise<Geofence[]>);
    assert.equal(geofences.length, 1);
    const area = geofences[0]?.area ?? '';
    const ring = (/^POLYGON \(\((.*)\)\)$/.exec(area)?.[1] ?? '').split(', ').map((pair) => pair.split(' ').map(Number) as [number, number]);
    assert.equal(ring.length, 5, area);
    assert.deepEqual(ring[0], ring[4], 'closed');
    const lats = ring.map(([lat]) => lat);
    const lons = ring.map(([, lon]) => lon);
    assert.ok(Math.min(...lats) < DEPOT.lat && DEPOT.lat < Math.max(...lats), `lat-lon order around the depot: ${area}`);
    assert.ok(Math.min(...lons) < DEPOT.lon && DEPOT.lon < Math.max(...lons), `lat-lon order around the depot: ${area}`);

    await page.getByRole('link', { name: t.nav.map }).click();
    await page.getByText(t.map.live.open as string, { exact: true }).waitFor();
    await sendOsmAnd(web, { id: UNIQUE_ID, lat: DEPOT.lat + 1, lon: DEPOT.lon, time: new Date(Date.now() + 1000) });
    await sendOsmAnd(web, { id: UNIQUE_ID, lat: DEPOT.lat, lon: DEPOT.lon, time: new Date(Date.now() + 2000) });
    await page.getByText(t.liveEvent('Delivery van', t.events.types.geofenceEnter as string)).waitFor();

    await page.getByRole('link', { name: t.nav.events }).click();
    await page.getByRole('cell', { name: new RegExp(t.events.inGeofence('Depot')) }).waitFor();
    await captureScreen(page, 'events');
    await page.getByLabel(t.events.type).selectOption('alarm');
    await page.getByRole('button', { name: t.history.show }).click();
    await page.getByText(t.events.empty).waitFor();
  });

  it('draws a circle with the keyboard alone: the map centre and a typed radius', async () => {
    await page.getByRole('link', { name: t.nav.geofences }).click();
    await page.locator('.map-canvas[data-state="ready"]').waitFor();
    await page.getByRole('button', { name: t.geofences.new }).click();
    await page.getByLabel(t.fields.name).fill('Yard');
    await page.getByLabel(t.geofences.circle).check();
    await page.getByRole('button', { name: t.geofences.addCentre }).press('Enter');
    await page.getByLabel(t.geofences.radius).fill('250');
    await page.getByText(t.geofences.ready.circle).waitFor();
    await page.getByRole('button', { name: t.geofences.create }).press('Enter');
    await page.getByRole('button', { name: `${t.edit} Yard` }).waitFor();
    const geofences = await page.evaluate(async () => (await fetch('/api/geofences')).json() as Promise<Geofence[]>);
    const circle = /^CIRCLE \((-?[\d.]+) (-?[\d.]+), 250\)$/.exec(geofences.find((geofence) => geofence.name === 'Yard')?.area ?? '');
    assert.ok(circle, JSON.stringify(geofences));
    assert.ok(Math.abs(Number(circle[1]) - DEPOT.lat) < 0.01 && Math.abs(Number(circle[2]) - DEPOT.lon) < 0.01, 'centred on the depot, latitude first');
  });

  it('moves a corner of a saved geofence by dragging it with the mouse, and only that corner', async () => {
    const before = polygonRing(await geofenceArea(page, 'Depot'));
    await page.getByRole('button', { name: `${t.edit} Depot` }).click();
    await page.getByText(t.geofences.ready.polygon).waitFor();
    // The map fits the whole area, its corners and the dots between them ready to drag.
    await captureScreen(page, 'geofence-edit');
    // Choosing corner 2 centres the map on it: the corner is then in the middle of the map.
    await page.getByLabel(t.geofences.vertexLabel.polygon, { exact: true }).selectOption({ label: t.geofences.vertex.polygon(2) });
    const box = await page.locator('.map-canvas').boundingBox();
    assert.ok(box);
    const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
    await hoverHandle(page, x, y);
    await page.mouse.down();
    await page.mouse.move(x + 60, y + 40, { steps: 6 });
    await page.mouse.up();
    await page.getByText(t.geofences.moved(t.geofences.vertex.polygon(2))).waitFor();
    await page.getByRole('button', { name: t.geofences.saveChanges }).click();
    await page.getByRole('button', { name: `${t.edit} Depot` }).waitFor();

    const after = polygonRing(await geofenceArea(page, 'Depot'));
    assert.equal(after.length, 5);
    assert.deepEqual([after[0], after[2], after[3], after[4]], [before[0], before[2], before[3], before[4]], 'the other corners stay');
    const [[lat, lon], [oldLat, oldLon]] = [after[1] as LatLon, before[1] as LatLon];
    assert.ok(lon > oldLon && lat < oldLat, `dragged right and down, so east and south, latitude first: ${before[1]} -> ${after[1]}`);
  });

  it('moves, adds and deletes corners with the keyboard alone', async () => {
    const before = polygonRing(await geofenceArea(page, 'Depot'));
    await page.getByRole('button', { name: `${t.edit} Depot` }).press('Enter');
    const corner = page.getByLabel(t.geofences.vertexLabel.polygon, { exact: true });
    await corner.focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    assert.equal(await corner.inputValue(), '2', 'corner 3 chosen');
    // The map centres on corner 3; two presses of the right arrow pan it east.
    await page.locator('.maplibregl-canvas').focus();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await page.waitForTimeout(800);
    await page.getByRole('button', { name: t.geofences.moveVertex.polygon(3) }).press('Enter');
    await page.getByText(t.geofences.moved(t.geofences.vertex.polygon(3))).waitFor();
    await page.getByRole('button', { name: t.geofences.insertVertex.polygon(3) }).press('Enter');
    await page.getByText(t.geofences.inserted(t.geofences.vertex.polygon(4))).waitFor();
    assert.equal(await corner.inputValue(), '3', 'the new corner 4 is chosen');
    await assertAccessible(page, 'geofence corners by keyboard');
    await corner.focus();
    await page.keyboard.press('Home');
    await page.getByRole('button', { name: t.geofences.deleteVertex.polygon(1) }).press('Enter');
    await page.getByText(t.geofences.deleted(t.geofences.vertex.polygon(1))).waitFor();
    await page.getByRole('button', { name: t.geofences.saveChanges }).press('Enter');
    await page.getByRole('button', { name: `${t.edit} Depot` }).waitFor();

    const after = polygonRing(await geofenceArea(page, 'Depot'));
    const [corner2, corner3, corner4] = [before[1] as LatLon, before[2] as LatLon, before[3] as LatLon];
    const moved = after[1] as LatLon;
    assert.equal(after.length, 5, 'four corners, closed');
    assert.deepEqual([after[0], after[3], after[4]], [corner2, corner4, corner2], 'corner 1 deleted, corners 2 and 4 where they were');
    assert.ok(moved[1] > corner3[1] + 0.001 && Math.abs(moved[0] - corner3[0]) < 1e-5, `corner 3 moved east only: ${corner3} -> ${moved}`);
    const added = after[2] as LatLon;
    assert.ok(Math.abs(added[0] - (moved[0] + corner4[0]) / 2) < 2e-6 && Math.abs(added[1] - (moved[1] + corner4[1]) / 2) < 2e-6, `a corner halfway: ${added}`);
  });

  it('closes a polygon on its first corner and adds a corner by dragging the dot halfway along an edge', async () => {
    await page.getByRole('button', { name: t.geofences.new }).click();
    await page.getByLabel(t.fields.name).fill('Gate');
    const box = await page.locator('.map-canvas').boundingBox();
    assert.ok(box);
    const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
    for (const [dx, dy] of [[-60, -60], [60, -60], [60, 60], [-60, -60]] as const) await page.mouse.click(x + dx, y + dy);
    await page.getByText(t.geofences.ready.polygon).waitFor();
    // The dot halfway between corners 1 and 2, dragged north.
    await hoverHandle(page, x, y - 60);
    await page.mouse.down();
    await page.mouse.move(x, y - 120, { steps: 6 });
    await page.mouse.up();
    await page.getByText(t.geofences.inserted(t.geofences.vertex.polygon(2))).waitFor();
    await page.getByRole('button', { name: t.geofences.create }).click();
    await page.getByRole('button', { name: `${t.edit} Gate` }).waitFor();

    const ring = polygonRing(await geofenceArea(page, 'Gate'));
    assert.equal(ring.length, 5, 'three corners clicked, one added, closed');
    const [first, added, second] = [ring[0] as LatLon, ring[1] as LatLon, ring[2] as LatLon];
    assert.ok(added[0] > first[0] + 1e-4 && Math.abs(added[0] - first[0]) > Math.abs(second[0] - first[0]), `the new corner north of the edge: ${ring.join(' / ')}`);
    assert.ok(first[1] < added[1] && added[1] < second[1], `between corners 1 and 2: ${ring.join(' / ')}`);
    const third = ring[3] as LatLon;
    assert.ok(Math.abs(second[0] - first[0]) < 1e-5 && Math.abs(second[1] - third[1]) < 1e-5, `the clicked corners stay: ${ring.join(' / ')}`);
  });

  it("moves a circle's centre with the keyboard, keeping its radius", async () => {
    const [before] = circleOf(await geofenceArea(page, 'Yard'));
    await page.getByRole('button', { name: `${t.edit} Yard` }).press('Enter');
    await page.getByText(t.geofences.ready.circle).waitFor();
    await page.locator('.maplibregl-canvas').focus();
    await page.keyboard.press('ArrowUp');
    await page.waitForTimeout(800);
    await page.getByRole('button', { name: t.geofences.moveCentre }).press('Enter');
    await page.getByText(t.geofences.moved(t.geofences.centre)).waitFor();
    await page.getByRole('button', { name: t.geofences.saveChanges }).press('Enter');
    await page.getByRole('button', { name: `${t.edit} Yard` }).waitFor();
    const [after, radius] = circleOf(await geofenceArea(page, 'Yard'));
    assert.equal(radius, 250);
    assert.ok(after[0] > before[0] + 1e-4 && Math.abs(after[1] - before[1]) < 1e-5, `moved north, latitude first: ${before} -> ${after}`);
  });

  it('moves a corner with a finger on a touch screen', async () => {
    const phone = await browser.newContext({ viewport: { width: 360, height: 740 }, hasTouch: true, isMobile: true });
    try {
      const touch = await phone.newPage();
      touch.setDefaultTimeout(45_000);
      await signInOnPage(touch, web, 'owner@example.com', password);
      // At 360 px the links are behind the menu.
      await touch.getByRole('button', { name: t.nav.menu }).tap();
      await touch.getByRole('link', { name: t.nav.geofences }).tap();
      await touch.locator('.map-canvas[data-state="ready"]').waitFor();
      const before = polygonRing(await geofenceArea(touch, 'Gate'));
      await touch.getByRole('button', { name: `${t.edit} Gate` }).tap();
      // Corner 3 chosen: the map centres on it.
      await touch.getByLabel(t.geofences.vertexLabel.polygon, { exact: true }).selectOption({ label: t.geofences.vertex.polygon(3) });
      await touch.locator('.map-canvas').scrollIntoViewIfNeeded();
      await touch.waitForTimeout(300);
      const box = await touch.locator('.map-canvas').boundingBox();
      assert.ok(box);
      const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
      const input = await phone.newCDPSession(touch);
      // A finger's pace, 60 moves a second, held still a moment before it lifts: a drag released at
      // speed would be a fling, and the browser would spend the next tap stopping it.
      const start = Date.now() / 1000;
      await input.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [{ x, y }], timestamp: start });
      for (let step = 1; step <= 6; step++) {
        await input.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: [{ x: x - step * 8, y: y + step * 6 }], timestamp: start + step / 60 });
      }
      await input.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [], timestamp: start + 0.5 });
      await touch.getByText(t.geofences.moved(t.geofences.vertex.polygon(3))).waitFor();
      await touch.getByRole('button', { name: t.geofences.saveChanges }).tap();
      await touch.getByRole('button', { name: `${t.edit} Gate` }).waitFor();

      const after = polygonRing(await geofenceArea(touch, 'Gate'));
      assert.deepEqual([after[0], after[1], after[3], after[4]], [before[0], before[1], before[3], before[4]], 'the other corners stay');
      const [[lat, lon], [oldLat, oldLon]] = [after[2] as LatLon, before[2] as LatLon];
      assert.ok(lon < oldLon && lat < oldLat, `dragged left and down, so west and south, and the map did not pan: ${before[2]} -> ${after[2]}`);
    } finally {
      await phone.close();
    }
  });

  it('claims a second device by scanning its QR code with the camera', async () => {
    const admin = await web.server.login({ email: 'admin@example.com' });
    const created = await web.server.app.inject({
      method: 'POST',
      url: '/api/devices/claim-tokens',
      headers: admin.authorization,
      payload: { uniqueId: 'tracker-0002', modelCode: 'pt-1', modelName: 'Pocket Tracker' },
    });
    const token = created.json().token as string;
    const folder = mkdtempSync(path.join(tmpdir(), 'trackstack-camera-'));
    const camera = await launchBrowser([`--use-file-for-fake-video-capture=${qrCodeVideo(token, path.join(folder, 'qr.y4m'))}`]);
    try {
      const phone = await camera.newContext({ viewport: { width: 360, height: 740 }, permissions: ['camera'] });
      const scanner = await phone.newPage();
      scanner.setDefaultTimeout(15_000);
      await signInOnPage(scanner, web, 'owner@example.com', password);
      await scanner.getByRole('button', { name: t.nav.menu }).click();
      await scanner.getByRole('link', { name: t.nav.claim }).click();
      await scanner.getByRole('button', { name: t.claim.scan }).click();
      await scanner.getByText('tracker-0002').waitFor();
      assert.equal(await scanner.getByLabel(t.claim.token).inputValue(), token);
      await scanner.getByRole('button', { name: t.claim.submit }).click();
      await scanner.getByRole('link', { name: t.claim.open }).waitFor();
    } finally {
      await camera.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('lets an administrator create claim tokens and manage users', async () => {
    const admin = await newPage(browser);
    await signInOnPage(admin.page, web, 'admin@example.com', password);
    await admin.page.getByRole('link', { name: t.nav.admin }).click();
    await admin.page.getByRole('cell', { name: 'owner@example.com' }).waitFor();
    await admin.page.getByLabel(t.admin.modelCode).fill('pt-2');
    await admin.page.getByLabel(t.admin.modelName).fill('Pocket Tracker 2');
    await admin.page.getByRole('button', { name: t.admin.createToken }).click();
    await admin.page.getByRole('cell', { name: 'Pocket Tracker 2' }).waitFor();
    await captureScreen(admin.page, 'admin');
    await admin.context.close();

    await page.goto(`${web.url}/admin`);
    await page.getByText(t.notFound.body).waitFor();
    await page.goto(`${web.url}/devices/999999`);
    await page.getByText(errorWords.NOT_FOUND as string).waitFor();
    await captureScreen(page, 'device-not-found');
    await context.close();
  });
});
