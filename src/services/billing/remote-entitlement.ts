import { Compile } from 'typebox/compile';
import type { Static } from 'typebox';
import type { EventBus } from '../../platform/bus.ts';
import { ReadThroughCache } from '../../platform/cache.ts';
import type { InternalClient } from '../../platform/http/internal-client.ts';
import { PlanEnforcement } from './entitlement.ts';
import type { Entitlement } from './entitlement.ts';
import type { PlanGrant } from './plans/grant.ts';
import { EntitlementAnswer } from './schemas.ts';
import type { SubscriptionCheck } from './subscription-check.ts';

export interface RemoteEntitlementOptions {
  /** Reaches a process running the billing module (BILLING_URL); its owner closes it. */
  client: InternalClient;
  /** Change notices evict cached answers; they reach this process when the bus is connected to Redis. */
  bus: EventBus;
  /** Bounds staleness when no change notice can arrive (no Redis). */
  ttlMs?: number;
  maxEntries?: number;
  now?: () => number;
}

interface RemoteAnswer {
  check: SubscriptionCheck;
  grant: PlanGrant;
}

const isAnswer = Compile(EntitlementAnswer);

/**
 * The entitlement API for a process without the billing module (split mode): billing's internal entitlement
 * route with X-Internal-Token, cached like the in-process one. An answer is kept no later than the instant it
 * says time alone may change it (an override's end, a cancelled subscription's end), so expiries take effect
 * on time here too.
 */
export function createRemoteEntitlement(options: RemoteEntitlementOptions): Entitlement {
  const entitlement = new RemoteEntitlement(options);
  options.bus.on('billing.subscription.changed', ({ userId }) => entitlement.invalidate(userId));
  options.bus.on('auth.user.changed', ({ userId }) => entitlement.invalidate(userId));
  return entitlement;
}

class RemoteEntitlement extends PlanEnforcement {
  /** Usage is counted where billing runs. */
  readonly usage = undefined;
  readonly #cache: ReadThroughCache<number, RemoteAnswer>;
  readonly #load: (userId: number) => Promise<RemoteAnswer>;

  constructor(options: RemoteEntitlementOptions) {
    super(options.now ?? Date.now);
    this.#cache = new ReadThroughCache({ ttlMs: options.ttlMs ?? 30_000, maxEntries: options.maxEntries ?? 100_000, now: this.now });
    this.#load = async (userId) => answerOf(await options.client.json(`/api/subscriptions/internal/entitlement/${userId}`));
  }

  async check(userId: number): Promise<SubscriptionCheck> {
    return (await this.#answer(userId)).check;
  }

  async planOf(userId: number): Promise<PlanGrant> {
    return (await this.#answer(userId)).grant;
  }

  invalidate(userId: number): void {
    this.#cache.invalidate(userId);
  }

  async #answer(userId: number): Promise<RemoteAnswer> {
    const answer = await this.#cache.get(userId, this.#load);
    const { validUntil } = answer.grant;
    if (validUntil === null || validUntil > this.now()) return answer;
    this.#cache.invalidate(userId);
    return this.#cache.get(userId, this.#load);
  }
}

function answerOf(body: unknown): RemoteAnswer {
  if (!isAnswer.Check(body)) throw new Error('billing answered an unexpected entitlement body');
  const answer: Static<typeof EntitlementAnswer> = body;
  const { check } = answer;
  const time = (text: string | null) => (text === null ? null : Date.parse(text));
  const expiresAt = time(check.expires_at);
  return {
    check: {
      userId: check.user_id,
      isSubscribed: check.is_subscribed,
      status: check.status,
      provider: check.provider,
      planId: check.plan_id,
      expiresAt: expiresAt === null ? null : new Date(expiresAt),
    },
    grant: {
      plan: answer.plan,
      source: answer.source,
      administrator: answer.administrator,
      validUntil: time(answer.valid_until),
      graceDays: answer.grace_days,
    },
  };
}
