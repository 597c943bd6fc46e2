import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { Geofence } from '../../src/client/index.ts';
import { t } from '../../web/src/i18n.ts';
import { browserUnavailable, captureScreen, launchBrowser, newPage, sendOsmAnd, signInOnPage, startWebServer } from '../support/browser.ts';
import type { WebServer } from '../support/browser.ts';

const unavailable = browserUnavailable();
const password = 'Correct-Horse-9';
/** The device is in Paris; the saved shapes are in Berlin and Munich, far from it. */
const DEVICE = { uniqueId: 'geofence-screen-van', lat: 48.8566, lon: 2.3522 };
const BERLIN = 'POLYGON ((52.50 13.38, 52.50 13.42, 52.53 13.42, 52.53 13.38, 52.50 13.38))';
const MUNICH = 'CIRCLE (48.137 11.575, 800)';

async function geofencesOf(page: Page): Promise<Geofence[]> {
  return page.evaluate(async () => (await fetch('/api/geofences')).json() as Promise<Geofence[]>);
}

/**
 * Where the map is centred, read back as a person would leave it: a circle saved at the map centre
 * (the keyboard's way to draw one), then deleted again; the page is reloaded after.
 */
async function mapCentre(page: Page): Promise<[number, number]> {
  await page.getByRole('button', { name: t.geofences.new }).click();
  await page.getByLabel(t.fields.name).fill('Centre probe');
  await page.getByLabel(t.geofences.circle).check();
  await page.getByRole('button', { name: t.geofences.addCentre }).click();
  await page.getByRole('button', { name: t.geofences.create }).click();
  await page.getByRole('button', { name: `${t.edit} Centre probe` }).waitFor();
  const probe = (await geofencesOf(page)).find((geofence) => geofence.name === 'Centre probe');
  assert.ok(probe);
  page.once('dialog', (dialog) => void dialog.accept());
  await page.getByRole('button', { name: `${t.delete} Centre probe` }).click();
  await page.getByRole('button', { name: `${t.edit} Centre probe` }).waitFor({ state: 'detached' });
  await page.reload();
  const centre = /^CIRCLE \((-?[\d.]+) (-?[\d.]+), \d+\)$/.exec(probe.area);
  assert.ok(centre, probe.area);
  return [Number(centre[1]), Number(centre[2])];
}

describe('web app: the geofences screen opens on the shapes, names fit them, and the map waits for its data', { skip: unavailable }, () => {
  let web: WebServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    web = await startWebServer();
    await web.server.auth!.api.accounts.create({ email: 'zones@example.com', password, name: 'Zones', emailVerified: true });
    const owner = await web.server.login({ email: 'zones@example.com' });
    const device = await web.server.app.inject({ method: 'POST', url: '/api/devices/', headers: owner.authorization, payload: { name: 'Van', uniqueId: DEVICE.uniqueId } });
    assert.equal(device.statusCode, 201, device.body);
    await sendOsmAnd(web, { id: DEVICE.uniqueId, lat: DEVICE.lat, lon: DEVICE.lon });
    for (const [name, area] of [['Berlin office', BERLIN], ['Munich depot', MUNICH]]) {
      const created = await web.server.app.inject({ method: 'POST', url: '/api/geofences', headers: owner.authorization, payload: { name, area } });
      assert.equal(created.statusCode, 201, created.body);
    }
    browser = await launchBrowser();
    ({ page } = await newPage(browser));
    await signInOnPage(page, web, 'zones@example.com', password);
    await page.getByRole('heading', { name: t.map.devices }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await web?.close();
  });

  it('takes no click on the map while it says it is loading, then opens on the saved shapes, not the device', async () => {
    // The devices' positions held back: the screen is still loading when a person starts to draw.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route('**/api/positions', async (route) => {
      await held;
      await route.continue();
    });
    await page.goto(`${web.url}/geofences`);
    await page.getByRole('button', { name: t.geofences.new }).click();
    const busy = page.locator('.map-busy');
    await busy.getByText(t.loading).waitFor();
    const box = await page.locator('.map').boundingBox();
    assert.ok(box);
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.click(box.x + box.width / 2 + 40, box.y + box.height / 2);
    assert.ok(await page.getByText(t.geofences.points(0), { exact: false }).isVisible(), 'no corner was added while loading');
    release();
    await busy.waitFor({ state: 'detached' });
    await page.unrouteAll();
    await page.getByRole('button', { name: t.cancel }).click();

    await page.reload();
    await page.locator('.map-canvas[data-state="ready"]').waitFor();
    await page.locator('.map-busy').waitFor({ state: 'detached' });
    const [lat, lon] = await mapCentre(page);
    // Between Berlin and Munich (the two shapes' bounds), far from the device in Paris.
    assert.ok(lat > 48 && lat < 52.6 && lon > 11 && lon < 13.5, `centred on the shapes: ${lat} ${lon}`);
  });

  it('a name in the list marks its shape and fits the map to it', async () => {
    await page.locator('.map-busy').waitFor({ state: 'detached' });
    const munich = page.getByRole('button', { name: t.geofences.show('Munich depot') });
    await munich.click();
    assert.equal(await munich.getAttribute('aria-pressed'), 'true');
    await captureScreen(page, 'geofences-chosen');
    const [lat, lon] = await mapCentre(page);
    assert.ok(Math.abs(lat - 48.137) < 0.005 && Math.abs(lon - 11.575) < 0.005, `fitted to Munich: ${lat} ${lon}`);
  });
});
