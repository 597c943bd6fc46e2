import { randomToken } from '../../../platform/crypto.ts';
import type { EventBus } from '../../../platform/bus.ts';
import type { RevokedSession } from '../events.ts';
import type { SessionRepository } from './repository.ts';

export interface SessionStart {
  userId: number;
  ip?: string | null;
  userAgent?: string | null;
  /** Set when the sign-in passed the second factor. */
  twoFactorAt?: number;
}

/** Login sessions: each access and refresh token belongs to one; revoking it ends them all. */
export class SessionService {
  private readonly repository: SessionRepository;
  private readonly bus: EventBus;
  private readonly accessTtlMs: number;
  private readonly sessionTtlMs: number;

  constructor(repository: SessionRepository, bus: EventBus, ttl: { accessToken: number; refreshToken: number }) {
    this.repository = repository;
    this.bus = bus;
    this.accessTtlMs = ttl.accessToken * 1000;
    this.sessionTtlMs = ttl.refreshToken * 1000;
  }

  async start(start: SessionStart): Promise<string> {
    const now = Date.now();
    const id = randomToken(18);
    await this.repository.insert({
      id,
      userId: start.userId,
      createdAt: now,
      expiresAt: now + this.sessionTtlMs,
      ip: start.ip ?? null,
      userAgent: start.userAgent?.slice(0, 512) ?? null,
      twoFactorAt: start.twoFactorAt ?? null,
    });
    return id;
  }

  /** When the sign-in of this live session of the user passed the second factor; null when it did not, or the session has ended. */
  async twoFactorPassedAt(id: string, userId: number): Promise<number | null> {
    const session = await this.repository.findActive(id, Date.now());
    return session !== undefined && session.user_id === userId ? session.two_factor_at : null;
  }

  async isActive(id: string): Promise<boolean> {
    return (await this.repository.findActive(id, Date.now())) !== undefined;
  }

  /** Sliding expiry: a session lives REFRESH_TOKEN_TTL past its latest refresh. */
  async extend(id: string): Promise<void> {
    await this.repository.extend(id, Date.now() + this.sessionTtlMs);
  }

  async revoke(id: string): Promise<void> {
    const now = Date.now();
    await this.announce(await this.repository.revoke([id], now), now);
  }

  async revokeAllOfUser(userId: number, options: { except?: string } = {}): Promise<void> {
    const now = Date.now();
    await this.announce(await this.repository.revokeAllOfUser(userId, now, options.except), now);
  }

  /** Sessions revoked recently enough that their access tokens may still be unexpired. */
  async stillRelevantRevocations(): Promise<RevokedSession[]> {
    const rows = await this.repository.revokedSince(Date.now() - this.accessTtlMs);
    return rows.map((row) => ({ id: row.id, until: (row.revoked_at ?? 0) + this.accessTtlMs }));
  }

  /** Forgets sessions that ended so long ago that none of their access tokens can still be valid. */
  async purgeEnded(): Promise<void> {
    await this.repository.purgeEndedBefore(Date.now() - this.accessTtlMs);
  }

  private async announce(ids: string[], now: number): Promise<void> {
    if (ids.length === 0) return;
    await this.bus.publish('auth.sessions.revoked', { sessions: ids.map((id) => ({ id, until: now + this.accessTtlMs })) });
  }
}
