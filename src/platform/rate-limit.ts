import type { Redis } from 'ioredis';
import type { Config } from '../config.ts';
import { sha256 } from './crypto.ts';
import { AppError } from './http/errors.ts';

/** At most `limit` hits per fixed window of `windowSeconds`. */
export interface RateRule {
  /** Names the counter family, e.g. 'login'; part of every key. */
  name: string;
  limit: number;
  windowSeconds: number;
}

export interface RateDecision {
  allowed: boolean;
  /** Milliseconds until the window that refused this hit ends (0 when allowed). */
  retryAfterMs: number;
}

/** Counts hits per key; the memory store is per process, the Redis store shared by every instance. */
export interface RateLimiter {
  hit(rule: RateRule, key: string): Promise<RateDecision>;
}

const ALLOWED: RateDecision = { allowed: true, retryAfterMs: 0 };

/** Counts a hit; over the limit → 429 RATE_LIMITED with Retry-After in seconds. */
export async function enforceRateLimit(limiter: RateLimiter, rule: RateRule, key: string): Promise<void> {
  const decision = await limiter.hit(rule, key);
  if (decision.allowed) return;
  const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
  throw new AppError('RATE_LIMITED', `Too many requests; try again in ${seconds} s`, { headers: { 'retry-after': String(seconds) } });
}

/** RATE_LIMITS=off: every hit is allowed. */
export const unlimited: RateLimiter = { hit: async () => ALLOWED };

/**
 * The limiter of a module: none with RATE_LIMITS=off; with a Redis connection, counters every
 * instance shares, under this deployment's EVENT_CHANNEL so deployments sharing a Redis stay apart
 * (their windows run on Redis's clock); otherwise this process's own, on `now`.
 */
export function chooseRateLimiter(config: Pick<Config, 'rateLimits' | 'eventChannel'>, redis: Redis | undefined, now?: () => number): RateLimiter {
  if (!config.rateLimits) return unlimited;
  return redis ? new RedisRateLimiter(redis, config.eventChannel) : new MemoryRateLimiter(now);
}

/** Keys carry e-mail addresses and IPs: they are stored only as digests. */
function counterKey(rule: RateRule, key: string): string {
  return `rate:${rule.name}:${sha256(key)}`;
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { count: number; endsAt: number }>();
  private nextPrune = 0;
  private readonly now: () => number;

  /** By default the time is read at each hit, so tests that mock Date move the windows. */
  constructor(now: () => number = () => Date.now()) {
    this.now = now;
  }

  async hit(rule: RateRule, key: string): Promise<RateDecision> {
    const now = this.now();
    this.prune(now);
    const id = counterKey(rule, key);
    let window = this.windows.get(id);
    if (!window || window.endsAt <= now) {
      window = { count: 0, endsAt: now + rule.windowSeconds * 1000 };
      this.windows.set(id, window);
    }
    window.count += 1;
    return window.count <= rule.limit ? ALLOWED : { allowed: false, retryAfterMs: window.endsAt - now };
  }

  private prune(now: number): void {
    if (now < this.nextPrune) return;
    this.nextPrune = now + 60_000;
    for (const [id, window] of this.windows) if (window.endsAt <= now) this.windows.delete(id);
  }
}

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  private readonly namespace: string;

  constructor(redis: Redis, namespace: string) {
    this.redis = redis;
    this.namespace = namespace;
  }

  async hit(rule: RateRule, key: string): Promise<RateDecision> {
    const id = `${this.namespace}:${counterKey(rule, key)}`;
    // One transaction: the first hit opens the window with its expiry, every hit counts, PTTL tells when it ends.
    const results = await this.redis
      .multi()
      .set(id, 0, 'PX', rule.windowSeconds * 1000, 'NX')
      .incr(id)
      .pttl(id)
      .exec();
    if (!results) throw new Error('rate limit transaction was aborted');
    for (const [error] of results) if (error) throw error;
    const count = Number(results[1]?.[1]);
    const ttl = Number(results[2]?.[1]);
    if (count <= rule.limit) return ALLOWED;
    return { allowed: false, retryAfterMs: ttl > 0 ? ttl : rule.windowSeconds * 1000 };
  }
}
