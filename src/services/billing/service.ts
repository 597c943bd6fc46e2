import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { EventBus } from '../../platform/bus.ts';
import type { FactRecorder } from '../../platform/outbox/outbox.ts';
import { AppError } from './errors.ts';
import type { UserDirectory } from '../auth/users/directory.ts';
import { isEntitled } from './subscription-check.ts';
import type { EntitlementRecord } from './subscription-check.ts';
import type { PlanCatalog } from './plans/catalog.ts';
import type { EntitlementState } from './plans/grant.ts';
import { WebhookError } from './providers/index.ts';
import type { BillingProvider, ProviderNotification, SubscriptionChange, SubscriptionStatus } from './providers/index.ts';
import type { BillingRepository, SubscriptionRow, WebhookEventOutcome } from './repository.ts';
import type { SubscriptionChanged } from './events.ts';

/** Column widths of the billing tables: longer identifiers are refused, a longer plan name or skip reason is cut. */
const LIMITS = {
  idempotencyKey: 255,
  providerSubscriptionId: 1024,
  planId: 255,
  planName: 255,
  reason: 255,
} as const;

/** PostgreSQL text cannot hold U+0000. */
const NUL = '\u0000';

/**
 * Provider times are stored only from the Unix epoch to the last millisecond that ISO 8601 writes with four year
 * digits: a later one cannot be answered as a date-time, and one beyond JavaScript's dates cannot be stored at all.
 */
const LATEST_TIME_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
/** Clock skew between a provider and us; an event dated further ahead would make every real later event stale. */
const EVENT_TIME_LEAD_MS = 24 * 3600_000;

/** Idempotency rows older than this are deleted: every provider has long stopped redelivering by then. */
const WEBHOOK_EVENT_RETENTION_MS = 90 * 24 * 3600_000;

export type WebhookResult =
  | { status: 'processed'; subscriptionId: number; subscriptionStatus: SubscriptionStatus }
  | { status: 'duplicate'; subscriptionId: number | null }
  | { status: 'skipped'; reason: string; subscriptionId: number | null };

export interface GooglePurchaseRegistration {
  /** False when the same user had registered the token before. */
  created: boolean;
  productId: string;
  subscription: SubscriptionRow | undefined;
}

export interface UserSubscriptions {
  appAccountToken: string;
  subscriptions: SubscriptionRow[];
}

export interface BillingServiceOptions {
  repository: BillingRepository;
  /** The plans of PLANS_FILE: overrides must name one of them. */
  catalog: PlanCatalog;
  /** Undefined when billing runs without a user directory (split mode without AUTH_URL). */
  users: UserDirectory | undefined;
  bus: EventBus;
  /** Subscription changes are facts for the modules that follow them (plans). */
  facts: FactRecorder;
  log: FastifyBaseLogger;
}

/** A change about to be written to the record of one provider subscription. */
interface PendingChange {
  provider: BillingProvider;
  providerSubscriptionId: string;
  eventTime: number;
  change: SubscriptionChange;
  /** The user the notification names (metadata, appAccountToken, registered purchase token), if any. */
  claimedUserId: number | undefined;
  /** Plan to record when neither the change nor the stored record names one (Google: the app's productId). */
  fallbackPlanId: string | null;
}

type ApplyResult = { kind: 'applied'; row: SubscriptionRow } | { kind: 'skipped'; reason: string; subscriptionId: number | null };

/** The parked form of a Google change: dates as epoch milliseconds. */
interface ParkedChange {
  status: SubscriptionStatus;
  planId: string | null;
  planName: string | null;
  currentPeriodStart: number | null;
  currentPeriodEnd: number | null;
  canceledAt: number | null;
}

/** Subscription state: verified provider notifications in, one record per (user, provider) out. */
export class BillingService {
  private readonly repository: BillingRepository;
  private readonly catalog: PlanCatalog;
  private readonly users: UserDirectory | undefined;
  private readonly bus: EventBus;
  private readonly facts: FactRecorder;
  private readonly log: FastifyBaseLogger;

  constructor(options: BillingServiceOptions) {
    this.repository = options.repository;
    this.catalog = options.catalog;
    this.users = options.users;
    this.bus = options.bus;
    this.facts = options.facts;
    this.log = options.log;
  }

  /**
   * Applies a verified notification exactly once: its idempotency key, the record change and the outcome
   * commit in one transaction, so a failure anywhere leaves nothing behind and the provider's retry starts afresh.
   */
  async applyNotification(notification: ProviderNotification): Promise<WebhookResult> {
    const target = targetOf(notification, Date.now());
    const { provider, idempotencyKey } = notification;
    // Asked before the transaction: on SQLite the directory shares the one connection the transaction holds.
    const stripeUserId =
      provider === 'stripe' && target.kind === 'apply' && notification.user.userId !== undefined
        ? await this.knownUser(notification.user.userId)
        : undefined;

    const { result, changedUserId } = await this.repository.transaction(async (tx) => {
      const isNew = await tx.insertEventIfNew({
        provider,
        idempotencyKey,
        eventTime: notification.eventTime.getTime(),
        receivedAt: Date.now(),
        providerSubscriptionId: notification.providerSubscriptionId,
      });
      if (!isNew) {
        const earlier = await tx.findEvent(provider, idempotencyKey);
        return { result: { status: 'duplicate' as const, subscriptionId: earlier?.subscription_id ?? null }, changedUserId: undefined };
      }
      if (target.kind === 'skip') {
        await tx.recordEventOutcome(provider, idempotencyKey, { outcome: 'skipped', reason: target.reason, subscriptionId: null, parkedChange: null });
        return { result: { status: 'skipped' as const, reason: target.reason, subscriptionId: null }, changedUserId: undefined };
      }
      const { change, providerSubscriptionId } = target;
      let claimedUserId: number | undefined;
      let fallbackPlanId: string | null = null;
      if (provider === 'stripe') {
        claimedUserId = stripeUserId;
      } else if (provider === 'apple') {
        const token = notification.user.appAccountToken;
        claimedUserId = token === undefined ? undefined : (await tx.findCustomerByAppAccountToken(token))?.user_id;
      } else {
        const link = await tx.lockGooglePurchaseLink(providerSubscriptionId, Date.now());
        claimedUserId = link.user_id ?? undefined;
        fallbackPlanId = link.product_id;
      }

      const eventTime = notification.eventTime.getTime();
      const applied = await this.applyChange(tx, { provider, providerSubscriptionId, eventTime, change, claimedUserId, fallbackPlanId });
      // The app registers a Google purchase token after buying, often after Google's first notification.
      const park = provider === 'google' && applied.kind === 'skipped' && applied.reason === 'unknown_user';
      await tx.recordEventOutcome(provider, idempotencyKey, { ...outcomeOf(applied), parkedChange: park ? JSON.stringify(toParked(change)) : null });
      if (applied.kind === 'skipped') {
        return { result: { status: 'skipped' as const, reason: applied.reason, subscriptionId: applied.subscriptionId }, changedUserId: undefined };
      }
      await tx.recordSubscriptionChange(this.facts, applied.row.user_id);
      return {
        result: { status: 'processed' as const, subscriptionId: applied.row.id, subscriptionStatus: applied.row.status },
        changedUserId: applied.row.user_id,
      };
    });

    this.log.info({ provider, idempotencyKey, ...result }, 'billing webhook handled');
    if (changedUserId !== undefined) await this.announceChange(changedUserId);
    return result;
  }

  /** Links a Google purchase token to the user and applies the notifications that arrived before the link. */
  async registerGooglePurchase(userId: number, purchaseToken: string, productId: string): Promise<GooglePurchaseRegistration> {
    const { registration, changed } = await this.repository.transaction(async (tx) => {
      const now = Date.now();
      const link = await tx.lockGooglePurchaseLink(purchaseToken, now);
      if (link.user_id !== null && link.user_id !== userId) throw new AppError('PURCHASE_TOKEN_TAKEN');
      if (link.user_id === userId) {
        const subscription = await tx.findByProviderSubscription('google', purchaseToken);
        return { registration: { created: false, productId: link.product_id ?? productId, subscription }, changed: false };
      }
      await tx.linkGooglePurchase(purchaseToken, userId, productId, now);
      let changed = false;
      for (const event of await tx.parkedGoogleEvents(purchaseToken)) {
        const applied = await this.applyChange(tx, {
          provider: 'google',
          providerSubscriptionId: purchaseToken,
          eventTime: event.event_time,
          change: fromParked(event.parked_change ?? ''),
          claimedUserId: userId,
          fallbackPlanId: productId,
        });
        changed ||= applied.kind === 'applied';
        await tx.recordEventOutcome('google', event.idempotency_key, outcomeOf(applied));
      }
      const subscription = await tx.findByProviderSubscription('google', purchaseToken);
      if (changed) await tx.recordSubscriptionChange(this.facts, userId);
      return { registration: { created: true, productId, subscription }, changed };
    });
    if (changed) await this.announceChange(userId);
    return registration;
  }

  /** The user's records and app_account_token, which is created on first use. */
  async subscriptionsOf(userId: number): Promise<UserSubscriptions> {
    let customer = await this.repository.findCustomer(userId);
    if (!customer) {
      await this.repository.insertCustomerIfAbsent(userId, randomUUID(), Date.now());
      customer = await this.repository.findCustomer(userId);
      if (!customer) throw new Error(`billing customer ${userId} vanished after insert`);
    }
    return { appAccountToken: customer.app_account_token, subscriptions: await this.repository.subscriptionsOfUser(userId) };
  }

  findByProviderSubscription(provider: BillingProvider, providerSubscriptionId: string): Promise<SubscriptionRow | undefined> {
    return this.repository.findByProviderSubscription(provider, providerSubscriptionId);
  }

  /** What decides the user's plan: their records, an administrator's override, and whether they are an administrator. */
  async entitlementState(userId: number): Promise<EntitlementState> {
    const [rows, override, administrator] = await Promise.all([
      this.repository.subscriptionsOfUser(userId),
      this.repository.findPlanOverride(userId),
      this.isAdministrator(userId),
    ]);
    return {
      records: rows.map(toEntitlementRecord),
      override: override && { planId: override.plan_id, until: override.until },
      administrator,
    };
  }

  /**
   * An administrator puts the user on a plan, for good or until `until`, whatever their subscriptions say.
   * 400 UNKNOWN_PLAN for a plan the file does not define; 404 for an unknown user.
   */
  async setPlanOverride(administratorId: number, userId: number, planId: string, until: number | null): Promise<void> {
    if (!this.catalog.find(planId)) throw new AppError('UNKNOWN_PLAN', `No plan has the id "${planId}"`, { details: [{ path: '/body/planId', message: 'is not a plan of PLANS_FILE' }] });
    const now = Date.now();
    if (until !== null && (until <= now || until > LATEST_TIME_MS)) {
      throw new AppError('VALIDATION_FAILED', '/body/until must be in the future (and before the year 10000)', { details: [{ path: '/body/until', message: 'must be in the future' }] });
    }
    if (!(await this.userExists(userId))) throw new AppError('NOT_FOUND', 'User not found');
    await this.repository.transaction(async (tx) => {
      await tx.upsertPlanOverride({ user_id: userId, plan_id: planId, until, set_by: administratorId, updated_at: now });
      await tx.recordSubscriptionChange(this.facts, userId);
    });
    await this.announceChange(userId);
  }

  /** 404 when the user has no override. */
  async clearPlanOverride(userId: number): Promise<void> {
    const deleted = await this.repository.transaction(async (tx) => {
      if (!(await tx.deletePlanOverride(userId))) return false;
      await tx.recordSubscriptionChange(this.facts, userId);
      return true;
    });
    if (!deleted) throw new AppError('NOT_FOUND', 'This user has no plan override');
    await this.announceChange(userId);
  }

  /** False only when the directory says the user does not exist. */
  async userExists(userId: number): Promise<boolean> {
    return this.users === undefined || (await this.users.get(userId)) !== undefined;
  }

  async isAdministrator(userId: number): Promise<boolean> {
    return (await this.users?.get(userId))?.administrator === true;
  }

  async pruneWebhookEvents(): Promise<number> {
    return this.repository.deleteEventsReceivedBefore(Date.now() - WEBHOOK_EVENT_RETENTION_MS);
  }

  private async knownUser(userId: number): Promise<number | undefined> {
    return (await this.userExists(userId)) ? userId : undefined;
  }

  /** Other instances (and this one) drop the user's cached entitlement; the change itself is already committed. */
  private async announceChange(userId: number): Promise<void> {
    const event: SubscriptionChanged = { userId };
    try {
      await this.bus.publish('billing.subscription.changed', event);
    } catch (error) {
      this.log.error({ err: error, userId }, 'announcing a subscription change failed');
    }
  }

  /**
   * Writes the change to the one record of (user, provider) unless it is stale, names another user than the
   * record, or would replace an entitling subscription with one that does not entitle. Runs inside a transaction.
   */
  private async applyChange(tx: BillingRepository, pending: PendingChange): Promise<ApplyResult> {
    const { provider, providerSubscriptionId, eventTime, claimedUserId } = pending;
    // Two attempts: when the record did not exist, a concurrent delivery may insert it first; then it is locked and read.
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const bySubscription = await tx.lockByProviderSubscription(provider, providerSubscriptionId);
      if (bySubscription && claimedUserId !== undefined && bySubscription.user_id !== claimedUserId) {
        this.log.warn({ provider, subscriptionId: bySubscription.id }, 'billing notification names another user than the stored record');
        return { kind: 'skipped', reason: 'user_mismatch', subscriptionId: bySubscription.id };
      }
      const userId = bySubscription?.user_id ?? claimedUserId;
      if (userId === undefined) return { kind: 'skipped', reason: 'unknown_user', subscriptionId: null };
      const current = bySubscription ?? (await tx.lockByUser(userId, provider));
      const now = Date.now();
      if (current) {
        if (eventTime < current.last_event_at) return { kind: 'skipped', reason: 'stale_event', subscriptionId: current.id };
        const sameSubscription = current.provider_subscription_id === providerSubscriptionId;
        if (!sameSubscription && isEntitled(toEntitlementRecord(current), now) && !isEntitled(entitlementOf(pending.change), now)) {
          return { kind: 'skipped', reason: 'superseded_subscription', subscriptionId: current.id };
        }
        const row = await tx.updateSubscription(current.id, { ...nextState(pending, sameSubscription ? current : undefined), updated_at: now });
        return { kind: 'applied', row };
      }
      const inserted = await tx.insertSubscriptionIfAbsent({
        ...nextState(pending, undefined),
        user_id: userId,
        provider,
        created_at: now,
        updated_at: now,
      });
      if (inserted) return { kind: 'applied', row: inserted };
    }
    throw new Error('the subscription record changed twice while it was being written');
  }
}

/** The record's fields after the change; what the provider left out is kept from the same subscription's record. */
function nextState(pending: PendingChange, previous: SubscriptionRow | undefined) {
  const { change } = pending;
  const planId = change.planId ?? nonEmpty(previous?.plan_id) ?? pending.fallbackPlanId ?? '';
  const ended = change.status === 'CANCELED' || change.status === 'EXPIRED';
  return {
    provider_subscription_id: pending.providerSubscriptionId,
    plan_id: planId,
    plan_name: change.planName?.slice(0, LIMITS.planName) ?? (previous?.plan_id === planId ? previous.plan_name : null),
    status: change.status,
    current_period_start: change.currentPeriodStart?.getTime() ?? previous?.current_period_start ?? null,
    current_period_end: change.currentPeriodEnd?.getTime() ?? previous?.current_period_end ?? null,
    // A renewal clears a cancellation; an expiry keeps the moment the customer cancelled.
    canceled_at: change.canceledAt?.getTime() ?? (ended ? (previous?.canceled_at ?? null) : null),
    last_event_at: pending.eventTime,
  };
}

function entitlementOf(change: SubscriptionChange): Pick<EntitlementRecord, 'status' | 'currentPeriodEnd'> {
  return { status: change.status, currentPeriodEnd: change.currentPeriodEnd?.getTime() ?? null };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

export function toEntitlementRecord(row: SubscriptionRow): EntitlementRecord {
  return {
    provider: row.provider,
    planId: row.plan_id,
    status: row.status,
    currentPeriodEnd: row.current_period_end,
    lastEventAt: row.last_event_at,
  };
}

function outcomeOf(applied: ApplyResult): WebhookEventOutcome {
  return applied.kind === 'applied'
    ? { outcome: 'processed', reason: null, subscriptionId: applied.row.id, parkedChange: null }
    : { outcome: 'skipped', reason: applied.reason, subscriptionId: applied.subscriptionId, parkedChange: null };
}

type NotificationTarget =
  | { kind: 'skip'; reason: string }
  | { kind: 'apply'; change: SubscriptionChange; providerSubscriptionId: string };

/**
 * What the notification asks for, checked before any write. Provider values wider than our columns, and times
 * we cannot store or answer, are malformed: a 400 rather than a database error and endless retries.
 */
function targetOf(notification: ProviderNotification, now: number): NotificationTarget {
  const { change, providerSubscriptionId } = notification;
  const tooLong = (value: string | null, limit: number) => value !== null && value.length > limit;
  if (tooLong(notification.idempotencyKey, LIMITS.idempotencyKey) || tooLong(providerSubscriptionId, LIMITS.providerSubscriptionId)) {
    throw new WebhookError('INVALID_PAYLOAD', 'The notification carries an identifier longer than this service stores');
  }
  if (!isStorableTime(notification.eventTime) || notification.eventTime.getTime() > now + EVENT_TIME_LEAD_MS) {
    throw new WebhookError('INVALID_PAYLOAD', 'The notification\'s event time is not a plausible date');
  }
  const storedText = [notification.idempotencyKey, providerSubscriptionId, ...(change.kind === 'apply' ? [change.planId, change.planName] : [])];
  if (storedText.some((text) => text?.includes(NUL))) {
    throw new WebhookError('INVALID_PAYLOAD', 'The notification carries a NUL character, which this service cannot store');
  }
  // A skip reason quotes the provider's type names: kept as a note, cut to its column.
  if (change.kind === 'skip') return { kind: 'skip', reason: change.reason.replaceAll(NUL, '').slice(0, LIMITS.reason) };
  if (![change.currentPeriodStart, change.currentPeriodEnd, change.canceledAt].every((time) => time === null || isStorableTime(time))) {
    throw new WebhookError('INVALID_PAYLOAD', 'The notification carries a subscription time outside 1970-01-01 to 9999-12-31');
  }
  if (tooLong(change.planId, LIMITS.planId)) throw new WebhookError('INVALID_PAYLOAD', 'The notification names a plan id longer than this service stores');
  if (providerSubscriptionId === null) throw new WebhookError('INVALID_PAYLOAD', 'The notification changes a subscription without naming it');
  return { kind: 'apply', change, providerSubscriptionId };
}

/** From the epoch to LATEST_TIME_MS; an invalid date (from a number beyond JavaScript's dates) is neither. */
function isStorableTime(time: Date): boolean {
  const millis = time.getTime();
  return millis >= 0 && millis <= LATEST_TIME_MS;
}

function toParked(change: SubscriptionChange): ParkedChange {
  return {
    status: change.status,
    planId: change.planId,
    planName: change.planName,
    currentPeriodStart: change.currentPeriodStart?.getTime() ?? null,
    currentPeriodEnd: change.currentPeriodEnd?.getTime() ?? null,
    canceledAt: change.canceledAt?.getTime() ?? null,
  };
}

function fromParked(json: string): SubscriptionChange {
  const parked = JSON.parse(json) as ParkedChange;
  const date = (millis: number | null) => (millis === null ? null : new Date(millis));
  return {
    kind: 'apply',
    status: parked.status,
    planId: parked.planId,
    planName: parked.planName,
    currentPeriodStart: date(parked.currentPeriodStart),
    currentPeriodEnd: date(parked.currentPeriodEnd),
    canceledAt: date(parked.canceledAt),
  };
}
