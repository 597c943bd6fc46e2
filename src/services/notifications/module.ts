import path from 'node:path';
import { defineModule } from '../../platform/module.ts';
import type { ModuleContext, ServiceModule } from '../../platform/module.ts';
import { registerHealthRoute } from '../../platform/http/health.ts';
import { registerUserCountsRoute, remoteUserCounts } from '../../platform/http/user-counts.ts';
import type { UserCounts } from '../../platform/http/user-counts.ts';
import { createMailer } from '../../platform/mail.ts';
import { chooseRateLimiter } from '../../platform/rate-limit.ts';
import { DEAD_LETTER_RETRY_TOPIC } from '../../platform/work/dead-letter-service.ts';
import type { UserDirectory } from '../auth/users/directory.ts';
import type { Entitlement } from '../billing/entitlement.ts';
import type { DeviceAccessApi } from '../devices/access.ts';
import type { StoredEventFact } from '../tracking/domain-events.ts';
import { unavailableDevices } from '../devices/access.ts';
import { unavailableUserDirectory } from '../auth/users/directory.ts';
import { AddressGuard } from './channels/addresses.ts';
import type { HostLookup } from './channels/addresses.ts';
import { MailSender } from './channels/mail.ts';
import type { ChannelSender } from './channels/notification.ts';
import { PushChannel } from './channels/push.ts';
import { WebhookSender } from './channels/webhook.ts';
import { DeliveryPlanner } from './deliveries/planner.ts';
import { RuleIndex } from './deliveries/rule-index.ts';
import { DeliveryService } from './deliveries/service.ts';
import { DeliveryWorker } from './deliveries/worker.ts';
import './domain-events.ts';
import { NO_DELIVERY_METRICS, registerDeliveryMetrics } from './metrics.ts';
import { notificationsMigrations } from './migrations/index.ts';
import type { PushKind, PushSender } from './push/push-sender.ts';
import { createPushSenders } from './push/senders.ts';
import type { PushSenders as ConfiguredPushSenders } from './push/senders.ts';
import { WebPushSender } from './push/webpush.ts';
import { DELIVERIES_QUEUE, NotificationsRepository } from './repository.ts';
import { notificationsRouteAccess } from './route-access.ts';
import { registerNotificationRoutes } from './routes.ts';
import { RuleService } from './rules.ts';
import type { Channel } from './schemas.ts';
import { TargetService } from './targets.ts';

export { notificationsMigrations };
export type { HostLookup };

export interface NotificationsDeps {
  /** Who may be notified of which device, and the devices' names. */
  devices: DeviceAccessApi | undefined;
  /** Recipients' addresses, language and timezone. */
  users: UserDirectory | undefined;
  /** Billing's plans (rule limit, channels); undefined when billing runs elsewhere without BILLING_URL: no plan limits. */
  entitlement?: Entitlement | undefined;
}

/** The push providers this process can send through, by kind; a kind without one is not a channel here. */
export type PushSenders = ReadonlyMap<PushKind, PushSender>;

/** What notifications counts per user for billing's usage: their rules. */
const NOTIFICATIONS_COUNTS = ['notificationRules'] as const;
type NotificationsCount = (typeof NOTIFICATIONS_COUNTS)[number];
const NOTIFICATIONS_USAGE_ROUTE = '/api/notifications/internal/usage/:userId';

declare module '../../platform/module.ts' {
  interface RunningModules {
    notifications: NotificationsModule;
  }
  interface ModuleHooks {
    notifications: NotificationsTestHooks;
  }
}

export interface NotificationsModule extends ServiceModule {
  worker: DeliveryWorker;
  /** Turns stored events into deliveries (the `tracking.event.created` fact). */
  planDeliveries(events: StoredEventFact[]): Promise<void>;
  /** Forgets a deleted device's or account's rules and deliveries (the `devices.device.deleted` and `auth.user.deleted` facts). */
  removeDevice(deviceId: number): Promise<void>;
  removeUser(userId: number): Promise<void>;
}

/** The providers this server is configured for (docs/push-providers.md). */
function configuredPushSenders(ctx: ModuleContext, lookup: HostLookup | undefined): ConfiguredPushSenders {
  return createPushSenders(ctx.config, { webpush: { allowPrivateEndpoints: ctx.config.notifications.allowPrivateUrls, ...(lookup ? { lookup } : {}) } });
}

/**
 * What tests replace: the push providers, the clock deliveries are planned, sent, retried and held
 * back by, and how the hosts of webhook URLs and Web Push endpoints resolve.
 */
export interface NotificationsTestHooks {
  pushSenders?: PushSenders | undefined;
  now?: (() => number) | undefined;
  lookup?: HostLookup | undefined;
}

/** Creates the module once its migrations have run. */
export async function createNotificationsModule(ctx: ModuleContext, deps: NotificationsDeps, hooks: NotificationsTestHooks = {}): Promise<NotificationsModule> {
  const { config, database, bus, log } = ctx;
  const testPushSenders = hooks.pushSenders;
  const now = hooks.now ?? Date.now;
  const push: ConfiguredPushSenders = testPushSenders ? { byKind: testPushSenders, vapidPublicKey: '', close: async () => undefined } : configuredPushSenders(ctx, hooks.lookup);
  const pushSenders = push.byKind;
  if (!deps.entitlement) log.warn('notifications: no billing module in this process and no BILLING_URL; plans are not applied: every user may use every configured channel, up to MAX_NOTIFICATION_RULES_PER_USER rules');
  if (!deps.devices || !deps.users) log.warn('notifications: the devices or auth interface is missing in this process; rules and deliveries wait until it is wired');
  const devices = deps.devices ?? unavailableDevices;
  const users = deps.users ?? unavailableUserDirectory;
  const settings = config.notifications;
  const repository = new NotificationsRepository(database);
  const limiter = chooseRateLimiter(config, ctx.redis, hooks.now);
  const guard = new AddressGuard({ allowPrivate: settings.allowPrivateUrls, lookup: hooks.lookup });
  const mailer = createMailer({ smtpUrl: config.mail.smtpUrl, from: config.mail.from, outboxDir: path.join(config.dataDir, 'outbox'), log });

  const senders = new Map<Channel, ChannelSender>([
    ['mail', new MailSender({ mailer, webUrl: config.webUrl, appName: config.appName })],
    ['webhook', new WebhookSender({ guard, userAgent: `${config.appName}-Webhooks/1` })],
  ]);
  for (const [kind, sender] of pushSenders) senders.set(kind, new PushChannel(sender, config.webUrl));
  const webPush = pushSenders.get('webpush');
  const webPushKey = webPush instanceof WebPushSender ? webPush.publicKey : undefined;
  const channelList: readonly Channel[] = ['web', ...senders.keys()];
  const channels = () => channelList;

  const metrics = ctx.metrics ? registerDeliveryMetrics(ctx.metrics) : NO_DELIVERY_METRICS;
  const worker = new DeliveryWorker({
    repository,
    devices,
    users,
    senders,
    plans: deps.entitlement,
    limiter,
    metrics,
    log,
    retryDelayMs: settings.retryDelayMs,
    leaseMs: settings.leaseMs,
    sendTimeoutMs: settings.sendTimeoutMs,
    work: config.work,
    retryWindowMs: settings.retryWindowMs,
    queueMetrics: ctx.queueMetrics,
    perUser: settings.userConcurrency,
    perHost: settings.hostConcurrency,
    webhookRatePerMinute: settings.webhookRatePerMinute,
    retentionMs: settings.deliveryRetentionMs,
    now,
  });
  // Without Redis no other instance's rule changes reach this one: the index is then read again every 2 s.
  const ruleIndex = new RuleIndex(repository, config.redisUrl ? 60_000 : 2_000);
  const planner = new DeliveryPlanner({
    repository,
    rules: ruleIndex,
    devices,
    channels,
    plans: deps.entitlement,
    retryWindowMs: settings.retryWindowMs,
    heldUntil: (userId, channel) => worker.heldUntil(userId, channel),
    now,
  });
  const hint = (topic: 'notifications.deliveries.queued' | 'notifications.rules.changed') => () => {
    bus.publish(topic, {}).catch((error: unknown) => log.warn({ err: error, topic }, 'notifications: a hint was not published'));
  };
  const announceQueued = hint('notifications.deliveries.queued');
  const announceRulesChanged = hint('notifications.rules.changed');
  const rules = new RuleService({ repository, devices, channels, guard, config: settings, plans: deps.entitlement, changed: announceRulesChanged });
  const counts: UserCounts<NotificationsCount> = { notificationRules: (userId) => repository.countRules(userId) };
  deps.entitlement?.usage?.contribute(counts);
  const targets = new TargetService(repository, settings, guard, channels, webPushKey);
  const deliveries = new DeliveryService({ repository, users, senders, channels, plans: deps.entitlement, limiter, retryWindowMs: settings.retryWindowMs, sendTimeoutMs: settings.sendTimeoutMs, queued: announceQueued });

  bus.on('notifications.rules.changed', () => ruleIndex.invalidate());
  // Stored events are never published as the fact itself: their live hint wakes the outbox at once.
  bus.on('tracking.events.created', () => ctx.outbox.wake());
  bus.on('notifications.deliveries.queued', () => worker.wake());
  // An administrator's retry of a dead-lettered delivery, wherever it was asked: this process takes it back at once.
  bus.on(DEAD_LETTER_RETRY_TOPIC, ({ queue }) => {
    if (queue === DELIVERIES_QUEUE) worker.retryRequested();
  });

  return {
    name: 'notifications',
    worker,
    async planDeliveries(events) {
      if ((await planner.plan(events)) > 0) announceQueued();
    },
    async removeDevice(deviceId) {
      await repository.removeDevice(deviceId);
      announceRulesChanged();
    },
    async removeUser(userId) {
      await repository.removeUser(userId);
      announceRulesChanged();
    },
    registerRoutes(app) {
      registerHealthRoute(app, 'notifications', database);
      registerUserCountsRoute(app, NOTIFICATIONS_USAGE_ROUTE, counts);
      registerNotificationRoutes(app, { rules, targets, deliveries, channels });
    },
    async start() {
      worker.start();
    },
    async stop() {
      await worker.stop();
      mailer.close();
      await push.close();
    },
  };
}

export const notificationsModule = defineModule({
  name: 'notifications',
  migrations: notificationsMigrations,
  routeAccess: notificationsRouteAccess,
  consumes: {
    'tracking.event.created': (module, { events }) => module.planDeliveries(events),
    'devices.device.deleted': (module, { deviceId }) => module.removeDevice(deviceId),
    'auth.user.deleted': (module, { userId }) => module.removeUser(userId),
  },
  remoteCounts: (client) => remoteUserCounts(client, NOTIFICATIONS_USAGE_ROUTE, NOTIFICATIONS_COUNTS),
  needs: ['devices', 'users', 'entitlement'],
  create: (ctx: ModuleContext, needs: NotificationsDeps, hooks?: NotificationsTestHooks) => createNotificationsModule(ctx, needs, hooks),
});
