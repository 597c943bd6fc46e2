import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { generatedRoute, registerDevices, runSimulation, simulatedIds } from '../../src/cli/simulate.ts';
import type { Command, Device } from '../../src/client/index.ts';
import { errorWords, t } from '../../web/src/i18n.ts';
import { browserUnavailable, captureScreen, launchBrowser, newPage, signInOnPage, startWebServer } from '../support/browser.ts';
import type { WebServer } from '../support/browser.ts';
import { eventually } from '../support/eventually.ts';

const unavailable = browserUnavailable();
const password = 'Correct-Horse-9';

describe('web app: commands on the device page', { skip: unavailable }, () => {
  let web: WebServer;
  let browser: Browser;
  let page: Page;
  let gt06Port: number;
  const abort = new AbortController();
  let simulation: Promise<unknown> | undefined;

  before(async () => {
    web = await startWebServer();
    gt06Port = await web.server.tracking!.ingestion.listen('gt06', 0);
    browser = await launchBrowser();
    await web.server.auth!.api.accounts.create({ email: 'driver@example.com', password, name: 'Driver', emailVerified: true });
    ({ page } = await newPage(browser));
  });

  after(async () => {
    abort.abort();
    await simulation;
    await browser?.close();
    await web?.close();
  });

  it('sends engineStop to a tracker connected over GT06 and shows it delivered, live', async () => {
    const [uniqueId] = simulatedIds('860000000007000', 1);
    await registerDevices({ url: web.url, email: 'driver@example.com', password, protocol: 'gt06', uniqueIds: [uniqueId!], speedKmh: 50, stopSeconds: 90 });
    simulation = runSimulation({ protocol: 'gt06', host: '127.0.0.1', port: gt06Port, uniqueIds: [uniqueId!], rate: 1, route: generatedRoute(), speedKmh: 50, stopSeconds: 90, signal: abort.signal });
    const driver = await web.server.login({ email: 'driver@example.com' });
    const api = async <T,>(url: string) => (await web.server.app.inject({ method: 'GET', url, headers: driver.authorization })).json() as T;
    const deviceId = (await api<Device[]>('/api/devices'))[0]!.id;
    // The protocol's command types are known once the tracker has logged in.
    await eventually(async () => (await api<{ type: string }[]>(`/api/commands/types?deviceId=${deviceId}`)).some((item) => item.type === 'engineStop'), 'the tracker logged in', 15_000);

    await signInOnPage(page, web, 'driver@example.com', password);
    // Exact: the sign-in page's own "Create an account" would match, and leaving the page then would abort the sign-in.
    await page.getByRole('link', { name: t.nav.account, exact: true }).waitFor();
    await page.goto(`${web.url}/devices/${deviceId}`);
    await page.getByRole('heading', { name: t.commands.title, exact: true }).waitFor();
    await page.getByText(t.commands.noHistory).waitFor();
    await page.getByLabel(t.commands.type, { exact: true }).selectOption('engineStop');
    await page.getByLabel(t.commands.saveAs).fill('Immobilise');
    await page.getByRole('button', { name: t.commands.send, exact: true }).click();
    await page.getByText(t.commands.sent).waitFor();
    // The tracker's answer arrives over the socket: the status turns delivered without a reload.
    await page.getByRole('cell', { name: t.commands.status.delivered }).waitFor();
    await page.getByRole('button', { name: t.commands.sendSaved('Immobilise') }).waitFor();
    await captureScreen(page, 'device-commands');

    const history = await api<Command[]>(`/api/commands/history?deviceId=${deviceId}`);
    assert.deepEqual(history.map((command) => [command.type, command.status]), [['engineStop', 'delivered']]);
  });

  it('says in words why a read-only account may not send', async () => {
    const admin = await web.server.login({ email: 'admin-commands@example.com', administrator: true });
    const users = await web.server.app.inject({ method: 'GET', url: '/api/auth/users?search=driver', headers: admin.authorization });
    const driver = (users.json() as { users: { id: number; email: string }[] }).users.find((user) => user.email === 'driver@example.com');
    assert.ok(driver, users.body);
    const changed = await web.server.app.inject({ method: 'PUT', url: `/api/auth/users/${driver.id}`, headers: admin.authorization, payload: { readonly: true } });
    assert.equal(changed.statusCode, 200, changed.body);
    await page.reload();
    await page.getByRole('button', { name: t.commands.sendSaved('Immobilise') }).click();
    await page.getByText(errorWords.USER_READONLY as string).waitFor();
  });
});

describe('web app: the plan screen and its limits', { skip: unavailable }, () => {
  let web: WebServer;
  let browser: Browser;
  let page: Page;
  let directory: string;

  before(async () => {
    directory = mkdtempSync(path.join(tmpdir(), 'trackstack-plans-'));
    const plansFile = path.join(directory, 'plans.json');
    writeFileSync(plansFile, JSON.stringify([{ id: 'free', name: 'Free', default: true, limits: { devices: 1 }, features: { commands: false } }]));
    web = await startWebServer({ PLANS_FILE: plansFile });
    browser = await launchBrowser();
    await web.server.auth!.api.accounts.create({ email: 'saver@example.com', password, name: 'Saver', emailVerified: true });
    ({ page } = await newPage(browser));
  });

  after(async () => {
    await browser?.close();
    await web?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('adding a second device on a one-device plan says so and leads to the plan screen, which shows 1 of 1', async () => {
    const admin = await web.server.login({ email: 'admin-plans@example.com', administrator: true });
    const tokens: string[] = [];
    for (const uniqueId of ['plan-tracker-1', 'plan-tracker-2']) {
      const created = await web.server.app.inject({ method: 'POST', url: '/api/devices/claim-tokens', headers: admin.authorization, payload: { uniqueId, modelCode: 'pt-1' } });
      assert.equal(created.statusCode, 201, created.body);
      tokens.push(created.json().token);
    }
    await signInOnPage(page, web, 'saver@example.com', password);
    for (const [index, token] of tokens.entries()) {
      await page.getByRole('link', { name: t.nav.claim }).click();
      await page.getByLabel(t.claim.token).fill(token);
      await page.getByRole('button', { name: t.claim.check }).click();
      await page.getByRole('button', { name: t.claim.submit }).click();
      if (index === 0) await page.getByRole('link', { name: t.claim.open }).waitFor();
    }
    await page.getByText(errorWords.PLAN_LIMIT_REACHED as string).waitFor();
    await captureScreen(page, 'plan-limit');
    await page.getByRole('link', { name: t.planLink }).click();
    await page.getByRole('heading', { level: 1, name: t.plan.title }).waitFor();
    await page.getByText(t.plan.current('Free'), { exact: true }).waitFor();
    await page.getByText(t.plan.usageOf(1, 1)).waitFor();
    await captureScreen(page, 'plan');
    const saver = await web.server.login({ email: 'saver@example.com' });
    const devices = (await web.server.app.inject({ method: 'GET', url: '/api/devices', headers: saver.authorization })).json() as Device[];
    assert.deepEqual(devices.map((device) => device.uniqueId), ['plan-tracker-1']);
  });
});
