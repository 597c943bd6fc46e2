import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { NotificationDelivery, NotificationRule, PushTarget } from '../../src/client/index.ts';
import { loadConfig } from '../../src/config.ts';
import { createPushSenders } from '../../src/services/notifications/push/senders.ts';
import type { PushSenders } from '../../src/services/notifications/push/senders.ts';
import { t } from '../../web/src/i18n.ts';
import { browserUnavailable, captureScreen, launchBrowser, newPage, signInOnPage, startWebServer } from '../support/browser.ts';
import type { WebServer } from '../support/browser.ts';
import { eventually } from '../support/eventually.ts';
import { startWebPushService } from '../support/push-providers.ts';
import type { WebPushService } from '../support/push-providers.ts';
import type { TestLogin } from '../support/server.ts';

const unavailable = browserUnavailable();
const password = 'Correct-Horse-9';
const words = t.notifications;

describe('web app: notifications', { skip: unavailable }, () => {
  let web: WebServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let dataDir: string;
  let senders: PushSenders;
  let pushService: WebPushService;
  let deadReceiver: Server;
  let deadUrl: string;
  let owner: TestLogin;

  const api = async <T,>(method: 'GET' | 'POST', url: string, payload?: object) => {
    const response = await web.server.app.inject({ method, url, headers: owner.authorization, payload });
    return response.json() as T;
  };

  before(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-web-push-'));
    pushService = await startWebPushService();
    senders = createPushSenders(loadConfig({ DATA_DIR: dataDir }), { webpush: { allowPrivateEndpoints: true } });
    // A webhook receiver that always fails, so a delivery fails for good and can be retried.
    deadReceiver = createServer((_request, response) => response.writeHead(400).end());
    await new Promise<void>((resolve) => deadReceiver.listen(0, '127.0.0.1', resolve));
    deadUrl = `http://127.0.0.1:${(deadReceiver.address() as AddressInfo).port}/hook`;
    web = await startWebServer({ NOTIFY_ALLOW_PRIVATE_URLS: 'true' }, { pushSenders: senders.byKind });
    await web.server.auth!.api.accounts.create({ email: 'notified@example.com', password, name: 'Notified', emailVerified: true });
    owner = await web.server.login({ email: 'notified@example.com' });
    const device = await web.server.app.inject({ method: 'POST', url: '/api/devices/', headers: owner.authorization, payload: { name: 'Garden dog', uniqueId: 'notify-dog' } });
    assert.equal(device.statusCode, 201, device.body);
    browser = await launchBrowser();
    ({ context, page } = await newPage(browser));
    await context.grantPermissions(['notifications'], { origin: web.url });
    // Headless Chromium has no push service: the browser's subscription comes from the local one, which checks
    // the VAPID key it was subscribed with against every push as the real services do.
    await page.exposeFunction('subscribeAtTestPushService', (key: string) => pushService.subscribe(key));
    await page.addInitScript({
      content: `
        window.shownNotifications = [];
        const BrowserNotification = window.Notification;
        window.Notification = class extends BrowserNotification {
          constructor(title, options) {
            super(title, options);
            window.shownNotifications.push(title);
          }
        };
        // Kept in sessionStorage: a browser keeps its subscription across reloads.
        const subscriptionOf = (json) => ({
          toJSON: () => json,
          unsubscribe: async () => {
            sessionStorage.removeItem('testPushSubscription');
            return true;
          },
        });
        PushManager.prototype.getSubscription = async () => {
          const json = sessionStorage.getItem('testPushSubscription');
          return json ? subscriptionOf(JSON.parse(json)) : null;
        };
        PushManager.prototype.subscribe = async function (options) {
          const key = btoa(String.fromCharCode(...new Uint8Array(options.applicationServerKey))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
          const json = await window.subscribeAtTestPushService(key);
          sessionStorage.setItem('testPushSubscription', JSON.stringify(json));
          return subscriptionOf(json);
        };`,
    });
    await signInOnPage(page, web, 'notified@example.com', password);
    await page.getByRole('link', { name: t.nav.notifications }).click();
    await page.getByRole('heading', { level: 1, name: words.title }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await web?.close();
    await senders?.close();
    await pushService?.close();
    deadReceiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('creates an alarm rule with a webhook, shows its secret once, and edits it', async () => {
    await page.getByText(words.noRules).waitFor();
    await page.getByLabel(words.event).selectOption('alarm');
    await page.getByLabel(words.alarms).fill('sos');
    await page.getByRole('checkbox', { name: words.channelNames.webhook }).check();
    await page.getByLabel(words.webhookUrl).fill(deadUrl);
    await captureScreen(page, 'notifications-new');
    await page.getByRole('button', { name: words.create }).click();
    const secret = page.locator('code.secret');
    await secret.waitFor();
    assert.match(await secret.innerText(), /^whsec_[0-9a-f]{64}$/);
    assert.equal(await page.getByLabel(words.alarms).inputValue(), '', 'a fresh form, so a second click makes no second rule');
    await captureScreen(page, 'notifications-secret');

    const [rule] = await api<NotificationRule[]>('GET', '/api/notifications');
    assert.deepEqual([rule?.type, rule?.always, rule?.channels, rule?.attributes], ['alarm', true, ['web', 'webhook'], { alarms: 'sos', webhookUrl: deadUrl }]);

    await page.getByRole('button', { name: words.editNamed(t.events.types.alarm as string) }).click();
    await page.getByRole('heading', { name: words.editRule }).waitFor();
    await page.getByRole('checkbox', { name: words.allDevices }).uncheck();
    await page.getByRole('checkbox', { name: 'Garden dog' }).check();
    await page.getByRole('button', { name: t.save }).click();
    await page.getByRole('heading', { name: words.newRule }).waitFor();
    await page.getByText(words.ruleSummary(t.events.types.alarm as string, words.deviceCount(1), `${words.channelNames.web}, ${words.channelNames.webhook}`)).waitFor();
    const [edited] = await api<NotificationRule[]>('GET', '/api/notifications');
    assert.equal(edited?.always, false);
    assert.equal(edited?.deviceIds.length, 1);
  });

  it('shows the alarm as a browser notification, lists the webhook delivery that failed, and queues it again', async () => {
    const query = new URLSearchParams({ id: 'notify-dog', lat: '52.5', lon: '13.4', timestamp: String(Math.floor(Date.now() / 1000)), alarm: 'sos' });
    const report = await fetch(`http://127.0.0.1:${web.osmandPort}/?${query}`, { method: 'POST' });
    assert.equal(report.status, 200);
    // The rule's web channel: the open page turns the live event into a browser notification.
    await eventually(
      async () => ((await page.evaluate('window.shownNotifications')) as string[]).includes(t.liveEvent('Garden dog', words.alarmNamed('sos'))),
      'a browser notification for the sos alarm',
      15_000,
    );
    await eventually(async () => (await api<NotificationDelivery[]>('GET', '/api/notifications/deliveries?status=failed')).length === 1, 'the webhook delivery failed', 15_000);
    await page.reload();
    await page.getByRole('button', { name: words.retry }).waitFor();
    await captureScreen(page, 'notifications-failed');
    await page.getByRole('button', { name: words.retry }).click();
    await page.getByText(words.retried).waitFor();
    const pending = await api<NotificationDelivery[]>('GET', '/api/notifications/deliveries?status=pending');
    const failedAgain = await api<NotificationDelivery[]>('GET', '/api/notifications/deliveries?status=failed');
    assert.ok(pending.length === 1 || failedAgain.length === 1, 'queued again (and perhaps failed again since)');
  });

  it('turns on push in this browser: the subscription made with the server key becomes a target, and a test push reaches it', async () => {
    await page.getByText(words.noTargets).waitFor();
    await page.getByRole('button', { name: words.pushEnable }).click();
    await page.getByText(words.pushOn).waitFor();
    await page.getByText(words.pushName).waitFor();
    assert.match(await page.getByRole('listitem').filter({ hasText: words.pushName }).innerText(), new RegExp(`· ${words.thisBrowser} ·`));
    const targets = await api<PushTarget[]>('GET', '/api/notifications/targets');
    assert.deepEqual(targets.map((target) => [target.kind, target.name]), [['webpush', words.pushName]]);

    await page.reload();
    await page.getByRole('button', { name: words.pushDisable }).waitFor();
    await page.getByText(words.pushOn).waitFor();
    assert.equal(await page.getByRole('button', { name: words.pushEnable }).count(), 0, 'a browser with push on is not offered to turn it on again');
    const worker = await page.evaluate<string | undefined>("navigator.serviceWorker.getRegistration('/').then((registration) => registration?.active?.scriptURL)");
    assert.equal(worker, `${web.url}/sw.js`);

    await page.getByLabel(words.testChannel).selectOption('webpush');
    await page.getByRole('button', { name: words.testSend }).click();
    await page.getByText(new RegExp(`${words.channelNames.webpush}.*: sent`)).waitFor();
    assert.equal(pushService.received.length, 1);
    assert.deepEqual(pushService.refused, []);
    await captureScreen(page, 'notifications');
  });

  it("the service worker shows an event's push and, clicked, opens the device", async () => {
    const rule = await web.server.app.inject({
      method: 'POST',
      url: '/api/notifications',
      headers: owner.authorization,
      payload: { type: 'alarm', always: true, channels: ['webpush'], attributes: { alarms: 'powerCut' } },
    });
    assert.equal(rule.statusCode, 201, rule.body);
    const query = new URLSearchParams({ id: 'notify-dog', lat: '52.5', lon: '13.4', timestamp: String(Math.floor(Date.now() / 1000)), alarm: 'powerCut' });
    assert.equal((await fetch(`http://127.0.0.1:${web.osmandPort}/?${query}`, { method: 'POST' })).status, 200);
    await eventually(async () => pushService.received.length === 2, 'the alarm pushed to the local push service', 15_000);
    const [device] = await api<{ id: number }[]>('GET', '/api/devices');

    // The push service hands the browser what it decrypted; DevTools delivers it to the worker as a real push.
    const cdp = await context.newCDPSession(page);
    const registrations = new Promise<{ registrationId: string; scopeURL: string }[]>((resolve) => cdp.once('ServiceWorker.workerRegistrationUpdated', (event) => resolve(event.registrations)));
    await cdp.send('ServiceWorker.enable');
    const registration = (await registrations).find((candidate) => candidate.scopeURL === `${web.url}/`);
    assert.ok(registration, 'the app registered its service worker');
    // Chromium keeps in getNotifications() only what its display lists, and under load its headless display
    // lists a notification late, so the list can come back empty: the test records what the browser showed for the worker.
    const [worker] = context.serviceWorkers();
    assert.ok(worker);
    await worker.evaluate(`{
      self.shownByWorker = [];
      const show = ServiceWorkerRegistration.prototype.showNotification;
      ServiceWorkerRegistration.prototype.showNotification = function (title, options) {
        return show.call(this, title, options).then(() => {
          self.shownByWorker.push({ title, data: options.data });
        });
      };
    }`);
    await page.getByRole('link', { name: t.nav.map }).click();
    await cdp.send('ServiceWorker.deliverPushMessage', { origin: web.url, registrationId: registration.registrationId, data: pushService.received[1]!.plaintext });

    const shown = () => worker.evaluate<{ title: string; data: { path: string } }[]>('self.shownByWorker');
    await eventually(async () => (await shown()).length === 1, 'the worker showed the notification', 15_000);
    assert.deepEqual(await shown(), [{ title: t.liveEvent('Garden dog', words.alarmNamed('powerCut')), data: { path: `/devices/${device!.id}` } }]);

    // Headless Chromium has no notification to click: the worker gets the click event its notification would raise.
    await worker.evaluate(`{
      const [{ title, data }] = self.shownByWorker;
      const click = new ExtendableEvent('notificationclick');
      Object.defineProperty(click, 'notification', { value: { title, data, close() {} } });
      self.dispatchEvent(click);
    }`);
    await page.waitForURL(`${web.url}/devices/${device!.id}`);
    await page.getByRole('heading', { level: 1, name: 'Garden dog' }).waitFor();
  });

  it('turns push off in this browser: the subscription is dropped and its target removed', async () => {
    await page.getByRole('link', { name: t.nav.notifications }).click();
    await page.getByRole('button', { name: words.pushDisable }).click();
    await page.getByRole('button', { name: words.pushEnable }).waitFor();
    await page.getByText(words.noTargets).waitFor();
    assert.deepEqual(await api<PushTarget[]>('GET', '/api/notifications/targets'), []);
    assert.equal(await page.evaluate<boolean>("navigator.serviceWorker.getRegistration('/').then((registration) => registration.pushManager.getSubscription()).then((subscription) => subscription === null)"), true);
    assert.equal(await page.evaluate<string | null>("localStorage.getItem('trackstack.pushTarget')"), null);
    await captureScreen(page, 'notifications-push-off');
  });

  it("signing out turns push off in this browser first: the next person here gets none of this account's pushes", async () => {
    await page.getByRole('button', { name: words.pushEnable }).click();
    await page.getByText(words.pushOn).waitFor();
    assert.equal((await api<PushTarget[]>('GET', '/api/notifications/targets')).length, 1);
    await page.getByRole('button', { name: t.nav.signOut }).click();
    await page.waitForURL(`${web.url}/login`);
    assert.deepEqual(await api<PushTarget[]>('GET', '/api/notifications/targets'), []);
    assert.equal(await page.evaluate<boolean>("navigator.serviceWorker.getRegistration('/').then((registration) => registration.pushManager.getSubscription()).then((subscription) => subscription === null)"), true);
  });
});
