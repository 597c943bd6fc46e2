import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { t } from '../../web/src/i18n.ts';
import { browserUnavailable, captureScreen, launchBrowser, newPage, sendOsmAnd, signInOnPage, startWebServer } from '../support/browser.ts';
import type { WebServer } from '../support/browser.ts';

const unavailable = browserUnavailable();
const password = 'Correct-Horse-9';
const DEVICES = 300;
const name = (index: number) => `Van ${String(index).padStart(3, '0')}`;
const DEPOT = { lat: 48.8566, lon: 2.3522 };

describe('web app: a long device list', { skip: unavailable }, () => {
  let web: WebServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    web = await startWebServer();
    await web.server.auth!.api.accounts.create({ email: 'fleet@example.com', password, name: 'Fleet', emailVerified: true });
    const fleet = await web.server.login({ email: 'fleet@example.com' });
    for (let index = 1; index <= DEVICES; index++) {
      const created = await web.server.app.inject({ method: 'POST', url: '/api/devices/', headers: fleet.authorization, payload: { name: name(index), uniqueId: `fleet-${index}` } });
      assert.equal(created.statusCode, 201, created.body);
    }
    browser = await launchBrowser();
    ({ page } = await newPage(browser));
    await signInOnPage(page, web, 'fleet@example.com', password);
  });

  after(async () => {
    await browser?.close();
    await web?.close();
  });

  it('renders only the rows in view, and the keyboard still reaches every device', async () => {
    const list = page.getByRole('list', { name: t.map.devices });
    await list.getByRole('button', { name: new RegExp(name(1)) }).waitFor();
    const rendered = await list.getByRole('listitem').count();
    assert.ok(rendered > 5 && rendered < 40, `${rendered} rows rendered of ${DEVICES}`);
    assert.equal(await list.getByRole('listitem').first().getAttribute('aria-setsize'), String(DEVICES));

    await list.getByRole('button', { name: new RegExp(name(1)) }).focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    assert.match((await page.evaluate('document.activeElement.textContent')) as string, new RegExp(name(3)));
    await page.keyboard.press('End');
    await list.getByRole('button', { name: new RegExp(name(DEVICES)) }).waitFor();
    assert.match((await page.evaluate('document.activeElement.textContent')) as string, new RegExp(name(DEVICES)));
    await page.keyboard.press('Enter');
    await page.getByRole('region', { name: name(DEVICES) }).waitFor();
    await page.keyboard.press('Home');
    assert.match((await page.evaluate('document.activeElement.textContent')) as string, new RegExp(name(1)));

    await page.getByLabel(t.map.search).fill(name(150));
    await list.getByRole('button', { name: new RegExp(name(150)) }).waitFor();
    assert.equal(await list.getByRole('listitem').count(), 1);
    await page.getByLabel(t.map.search).fill('');
    await captureScreen(page, 'device-list');
  });

  it('gathers close devices into a cluster with their count, and follows the chosen device as it moves', async () => {
    // 21 vans parked within about 50 m of each other: one cluster at the zoom the map opens on.
    for (let index = 1; index <= 21; index++) {
      await sendOsmAnd(web, { id: `fleet-${index}`, lat: DEPOT.lat + index * 0.00002, lon: DEPOT.lon + index * 0.00002 });
    }
    await page.reload();
    await page.locator('.map-canvas[data-state="ready"]').waitFor();
    const cluster = page.locator('.cluster-count');
    await cluster.filter({ hasText: /^21$/ }).waitFor();

    await page.getByLabel(t.map.search).fill(name(21));
    await page.getByRole('list', { name: t.map.devices }).getByRole('button', { name: new RegExp(name(21)) }).click();
    await page.getByRole('checkbox', { name: t.map.follow }).check();
    await page.waitForTimeout(800);
    const before = await cluster.boundingBox();
    assert.ok(before, 'the cluster is in view');
    // The followed van drives about 700 m north: the map moves with it, so the others' cluster slides down the screen.
    await sendOsmAnd(web, { id: 'fleet-21', lat: DEPOT.lat + 0.006, lon: DEPOT.lon, time: new Date(Date.now() + 1000) });
    await cluster.filter({ hasText: /^20$/ }).waitFor();
    await page.waitForTimeout(800);
    const after = await cluster.boundingBox();
    assert.ok(after && after.y - before.y > 60, `the map followed the van north: the cluster moved from ${before.y} to ${after?.y} px`);
  });
});
