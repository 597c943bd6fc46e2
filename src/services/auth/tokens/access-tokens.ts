import { randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import type { RevocationList } from './revocations.ts';

/** Header `typ` of access tokens: temp, reset and verification tokens are opaque and can never pass as one. */
export const ACCESS_TOKEN_TYPE = 'at+jwt';

export interface AccessTokenSubject {
  userId: number;
  email: string;
  sessionId: string;
}

export interface VerifiedAccessToken extends AccessTokenSubject {
  /** Epoch milliseconds. */
  expiresAt: number;
}

/**
 * Epoch milliseconds now: the system's, or a test's that it moves instead of waiting. The default reads
 * `Date.now()` at each call, so a test that mocks Date after the server started moves it too.
 */
export type Now = () => number;

export class AccessTokenIssuer {
  private readonly key: KeyObject;
  private readonly issuer: string;
  private readonly ttlSeconds: number;
  private readonly now: Now;

  constructor(key: KeyObject, issuer: string, ttlSeconds: number, now: Now = () => Date.now()) {
    this.key = key;
    this.issuer = issuer;
    this.ttlSeconds = ttlSeconds;
    this.now = now;
  }

  get ttl(): number {
    return this.ttlSeconds;
  }

  issue(subject: AccessTokenSubject): Promise<string> {
    const issuedAt = Math.floor(this.now() / 1000);
    return new SignJWT({ userId: subject.userId, email: subject.email, sid: subject.sessionId })
      .setProtectedHeader({ alg: 'EdDSA', typ: ACCESS_TOKEN_TYPE })
      .setSubject(String(subject.userId))
      .setIssuer(this.issuer)
      .setJti(randomUUID())
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + this.ttlSeconds)
      .sign(this.key);
  }
}

const MAX_CACHED_TOKENS = 100_000;

/**
 * Verifies access tokens. A verified token is cached until it expires, so a request costs a map
 * lookup, not a signature check or a database read; the revocation list is consulted every time,
 * so a logout wins at once.
 */
export class AccessTokenVerifier {
  private readonly key: KeyObject;
  private readonly issuer: string;
  private readonly revocations: RevocationList;
  private readonly now: Now;
  private readonly cache = new Map<string, VerifiedAccessToken>();

  constructor(key: KeyObject, issuer: string, revocations: RevocationList, now: Now = () => Date.now()) {
    this.key = key;
    this.issuer = issuer;
    this.revocations = revocations;
    this.now = now;
  }

  async verify(token: string): Promise<VerifiedAccessToken | null> {
    const verified = this.cache.get(token) ?? (await this.verifySignature(token));
    return verified && this.stillValid(token, verified);
  }

  /**
   * verify()'s answer for a token whose signature was checked before, without a promise, so the
   * gateway's per-request cost stays a map lookup; undefined for a token not seen yet.
   */
  verifyCached(token: string): VerifiedAccessToken | null | undefined {
    const verified = this.cache.get(token);
    return verified && this.stillValid(token, verified);
  }

  private stillValid(token: string, verified: VerifiedAccessToken): VerifiedAccessToken | null {
    if (verified.expiresAt <= this.now()) {
      this.cache.delete(token);
      return null;
    }
    return this.revocations.has(verified.sessionId) ? null : verified;
  }

  private async verifySignature(token: string): Promise<VerifiedAccessToken | null> {
    if (token.length > 4096) return null;
    try {
      const { payload } = await jwtVerify(token, this.key, {
        issuer: this.issuer,
        typ: ACCESS_TOKEN_TYPE,
        algorithms: ['EdDSA'],
        currentDate: new Date(this.now()),
        requiredClaims: ['exp', 'sid', 'userId'],
      });
      const { userId, email, sid, exp } = payload as { userId: unknown; email: unknown; sid: unknown; exp: number };
      if (!Number.isSafeInteger(userId) || typeof sid !== 'string' || typeof email !== 'string') return null;
      const verified = { userId: userId as number, email, sessionId: sid, expiresAt: exp * 1000 };
      if (this.cache.size >= MAX_CACHED_TOKENS) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.set(token, verified);
      return verified;
    } catch {
      return null;
    }
  }
}
