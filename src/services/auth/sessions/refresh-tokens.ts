import type { FastifyBaseLogger } from 'fastify';
import { randomToken, sha256 } from '../../../platform/crypto.ts';
import { AppError } from '../errors.ts';
import type { AuthKeys } from '../keys.ts';
import type { NewRefreshToken, RefreshTokenRepository } from './repository.ts';
import type { SessionService } from './service.ts';

/** A rotated token presented again within this window is a concurrent refresh (two tabs), not a theft. */
export const REUSE_GRACE_MS = 10_000;

export interface Rotation {
  sessionId: string;
  userId: number;
  refreshToken: string;
}

/**
 * Opaque refresh tokens, stored hashed and rotated on every use. The tokens of one session form a
 * family: presenting a rotated token after the grace period revokes the session, ending the thief's
 * and the owner's copies alike. Within the grace the answer is the token's one successor, so the
 * family stays a single chain that reuse detection sees whole.
 */
export class RefreshTokenService {
  private readonly repository: RefreshTokenRepository;
  private readonly sessions: SessionService;
  private readonly keys: AuthKeys;
  private readonly ttlMs: number;
  private readonly log: FastifyBaseLogger;

  constructor(repository: RefreshTokenRepository, sessions: SessionService, keys: AuthKeys, ttlSeconds: number, log: FastifyBaseLogger) {
    this.repository = repository;
    this.sessions = sessions;
    this.keys = keys;
    this.ttlMs = ttlSeconds * 1000;
    this.log = log;
  }

  async issue(sessionId: string, userId: number): Promise<string> {
    const token = randomToken(32);
    await this.repository.insert(this.newRow(token, sessionId, userId, Date.now()));
    return token;
  }

  /** Exchanges a refresh token for its successor; throws INVALID_TOKEN or REFRESH_TOKEN_REUSED (both 401). */
  async rotate(token: string): Promise<Rotation> {
    const tokenHash = sha256(token);
    const now = Date.now();
    const row = await this.repository.find(tokenHash);
    if (!row || row.expires_at <= now) throw new AppError('INVALID_TOKEN', 'The refresh token is invalid or expired');
    if (!(await this.sessions.isActive(row.session_id))) throw new AppError('INVALID_TOKEN', 'The session has ended');

    const successor = this.keys.refreshSuccessor(token);
    const won = row.rotated_at === null && (await this.repository.rotate(tokenHash, this.newRow(successor, row.session_id, row.user_id, now), now));
    if (!won) {
      const rotatedAt = row.rotated_at ?? (await this.repository.find(tokenHash))?.rotated_at ?? now;
      if (now - rotatedAt > REUSE_GRACE_MS) {
        await this.sessions.revoke(row.session_id);
        this.log.warn({ userId: row.user_id, sessionId: row.session_id }, 'refresh token reused after rotation: session revoked');
        throw new AppError('REFRESH_TOKEN_REUSED');
      }
    }
    await this.sessions.extend(row.session_id);
    return { sessionId: row.session_id, userId: row.user_id, refreshToken: successor };
  }

  private newRow(token: string, sessionId: string, userId: number, now: number): NewRefreshToken {
    return { tokenHash: sha256(token), sessionId, userId, createdAt: now, expiresAt: now + this.ttlMs };
  }
}
