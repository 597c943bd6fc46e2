import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { t } from '../../web/src/i18n.ts';
import { browserUnavailable, captureScreen, launchBrowser, newPage, sendOsmAnd, signInOnPage, startWebServer } from '../support/browser.ts';
import type { WebServer } from '../support/browser.ts';

const unavailable = browserUnavailable();
const password = 'Correct-Horse-9';
/** One device with a position (the map centres on it, so its marker is the map's centre) and one without. */
const TRACKED = { name: 'Delivery bike', uniqueId: 'phone-bike', at: { lat: 52.52, lon: 13.405 } };
const SILENT = { name: 'Spare tracker', uniqueId: 'phone-spare' };

/** The element's box lies wholly within the window: a person sees it without scrolling. */
async function assertInView(page: Page, selector: string, what: string): Promise<void> {
  const box = await page.locator(selector).first().boundingBox();
  const viewport = page.viewportSize();
  assert.ok(box && viewport, `${what} is on the page`);
  assert.ok(box.y >= 0 && box.y + box.height <= viewport.height + 1 && box.height > 0, `${what} is in view: y ${box.y}, height ${box.height} in a ${viewport.height} px window`);
}

describe('web app: phone first, and the map that names its devices', { skip: unavailable }, () => {
  let web: WebServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    web = await startWebServer();
    await web.server.auth!.api.accounts.create({ email: 'rider@example.com', password, name: 'Rider', emailVerified: true });
    const rider = await web.server.login({ email: 'rider@example.com' });
    for (const device of [TRACKED, SILENT]) {
      const created = await web.server.app.inject({ method: 'POST', url: '/api/devices/', headers: rider.authorization, payload: { name: device.name, uniqueId: device.uniqueId } });
      assert.equal(created.statusCode, 201, created.body);
    }
    await sendOsmAnd(web, { id: TRACKED.uniqueId, ...TRACKED.at, speed: 10 });
    browser = await launchBrowser();
    ({ page } = await newPage(browser));
  });

  after(async () => {
    await browser?.close();
    await web?.close();
  });

  it('at 360 px shows the map in the first screen under a one-line bar, the list as a sheet over it', async () => {
    await page.setViewportSize({ width: 360, height: 740 });
    await signInOnPage(page, web, 'rider@example.com', password);
    await page.locator('.map-canvas[data-state="ready"]').waitFor();
    await assertInView(page, '.map-canvas', 'the map');
    const bar = await page.locator('header.top').boundingBox();
    assert.ok(bar && bar.height < 70, `the top bar is one line (${bar?.height} px)`);
    // The navigation is a menu: closed, then open with every link, closed again by going somewhere.
    const menu = page.getByRole('button', { name: t.nav.menu });
    assert.equal(await menu.getAttribute('aria-expanded'), 'false');
    assert.equal(await page.getByRole('link', { name: t.nav.events }).isVisible(), false);
    await menu.click();
    assert.equal(await menu.getAttribute('aria-expanded'), 'true');
    await page.getByRole('link', { name: t.nav.events }).waitFor();
    await captureScreen(page, 'phone-menu');
    await page.keyboard.press('Escape');
    await page.getByRole('link', { name: t.nav.events }).waitFor({ state: 'hidden' });

    // The sheet: half the map at first, then by keyboard to full, and down to collapsed.
    const sheet = page.locator('.sheet');
    assert.equal(await sheet.getAttribute('data-sheet'), 'half');
    await page.getByRole('list', { name: t.map.devices }).waitFor();
    await captureScreen(page, 'phone-map');
    const more = page.getByRole('button', { name: t.map.sheet.more });
    const less = page.getByRole('button', { name: t.map.sheet.less });
    await more.focus();
    await page.keyboard.press('Enter');
    assert.equal(await sheet.getAttribute('data-sheet'), 'full');
    assert.ok(await more.isDisabled(), 'no more than full');
    await page.getByRole('group', { name: t.map.sheet.label(t.map.sheet.states.full as string) }).waitFor();
    await less.click();
    await less.click();
    assert.equal(await sheet.getAttribute('data-sheet'), 'peek');
    assert.equal(await page.getByRole('list', { name: t.map.devices }).isVisible(), false, 'collapsed, the list gives the map its room');
    const sheetBox = await sheet.boundingBox();
    assert.ok(sheetBox && sheetBox.height < 150, `collapsed, the sheet is a strip (${sheetBox?.height} px)`);
    await captureScreen(page, 'phone-sheet-collapsed');
  });

  it('at 360 px a device chosen in the list shows its card over the map with its actions, and each action goes where it says', async () => {
    await page.getByRole('button', { name: t.map.sheet.more }).click();
    await page.getByRole('button', { name: new RegExp(TRACKED.name) }).click();
    const card = page.getByRole('region', { name: TRACKED.name });
    await card.waitFor();
    assert.equal(await page.locator('.sheet').getAttribute('data-sheet'), 'peek', 'the sheet steps down to show the map');
    await assertInView(page, '.card.selected', 'the card');
    await card.getByText(t.status.online).waitFor();
    await captureScreen(page, 'phone-device-card');

    await card.getByRole('link', { name: t.device.history }).click();
    await page.getByRole('heading', { name: t.history.title(TRACKED.name) }).waitFor();
    await page.goBack();
    await page.getByRole('button', { name: new RegExp(TRACKED.name) }).click();
    await card.getByRole('link', { name: t.map.commands }).click();
    await page.waitForURL(/#device-commands$/);
    await eventuallyFocused(page, t.commands.title);
    await assertInView(page, '#device-commands', 'the commands section');
    await page.goBack();
    await page.getByRole('button', { name: new RegExp(TRACKED.name) }).click();
    await card.getByRole('link', { name: t.map.share }).click();
    await page.waitForURL(/#device-sharing$/);
    await eventuallyFocused(page, t.device.sharing);
    await page.goBack();
    await page.getByRole('button', { name: new RegExp(TRACKED.name) }).click();
    await card.getByRole('button', { name: t.map.closeCard(TRACKED.name) }).click();
    await card.waitFor({ state: 'detached' });
  });

  it('at 1280 px names each device beside its marker, and a click on the marker shows its card in view', async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${web.url}/`);
    await page.locator('.map-canvas[data-state="ready"]').waitFor();
    const label = page.locator('.device-label');
    await label.waitFor();
    assert.deepEqual(await label.allTextContents(), [TRACKED.name], 'the device with a position is named on the map, the one without is not');
    // The map fits its one positioned device: the marker is the map's centre.
    const map = await page.locator('.map-canvas').boundingBox();
    assert.ok(map);
    await page.mouse.click(map.x + map.width / 2, map.y + map.height / 2);
    await page.getByRole('region', { name: TRACKED.name }).waitFor();
    await assertInView(page, '.card.selected', 'the card of the clicked marker');
    await assertInView(page, '.live-events', 'the latest events');
    await captureScreen(page, 'map-device-card');
  });

  it('shows speeds in the unit chosen on the account screen, saved in the account', async () => {
    await page.goto(`${web.url}/account`);
    await page.getByRole('heading', { name: t.account.units }).waitFor();
    await page.getByRole('group', { name: t.account.speedUnit }).getByLabel(t.account.speedUnits.mph as string).check();
    await page.getByRole('group', { name: t.account.distanceUnit }).getByLabel(t.account.distanceUnits.mi as string).check();
    await page.getByRole('button', { name: t.account.saveUnits }).click();
    await page.getByRole('region', { name: t.account.units }).getByText(t.saved).waitFor();
    await captureScreen(page, 'account-units');
    const profile = await page.evaluate(async () => (await fetch('/api/auth/profile')).json() as Promise<{ attributes: Record<string, unknown> }>);
    assert.deepEqual([profile.attributes.speedUnit, profile.attributes.distanceUnit], ['mph', 'mi']);
    // 10 knots reported: 11.5 mph.
    await page.goto(`${web.url}/`);
    await page.getByRole('button', { name: new RegExp(TRACKED.name) }).click();
    await page.getByRole('region', { name: TRACKED.name }).getByText(/· 12 mph$/).waitFor();
    await page.getByRole('region', { name: TRACKED.name }).getByRole('link', { name: t.map.details }).click();
    await page.getByRole('definition').filter({ hasText: /^12 mph$/ }).waitFor();
    // After a reload too, and back to km/h.
    await page.goto(`${web.url}/account`);
    assert.equal(await page.getByRole('group', { name: t.account.speedUnit }).getByLabel(t.account.speedUnits.mph as string).isChecked(), true);
    await page.getByRole('group', { name: t.account.speedUnit }).getByLabel(t.account.speedUnits.kmh as string).check();
    await page.getByRole('button', { name: t.account.saveUnits }).click();
    await page.getByRole('region', { name: t.account.units }).getByText(t.saved).waitFor();
  });

  it("writes dates and numbers in the browser's language", async () => {
    const german = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'de-DE' });
    try {
      const other = await german.newPage();
      await signInOnPage(other, web, 'rider@example.com', password);
      await other.getByRole('button', { name: new RegExp(TRACKED.name) }).click();
      await other.getByRole('region', { name: TRACKED.name }).getByRole('link', { name: t.map.details }).click();
      await other.getByRole('definition').filter({ hasText: /^52,52000, 13,40500$/ }).waitFor();
      await other.getByRole('definition').filter({ hasText: /^\d{2}\.\d{2}\.\d{4}, \d{2}:\d{2}:\d{2}$/ }).waitFor();
      await other.getByRole('definition').filter({ hasText: /^19 km\/h$/ }).waitFor();
    } finally {
      await german.close();
    }
  });
});

/** The heading named `name` has the focus (the device page moves it there for `#…` addresses). */
async function eventuallyFocused(page: Page, name: string): Promise<void> {
  await page.waitForFunction((text) => (globalThis as unknown as { document: { activeElement: { textContent: string } | null } }).document.activeElement?.textContent === text, name);
}
