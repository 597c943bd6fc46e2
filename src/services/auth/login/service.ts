import { randomToken } from '../../../platform/crypto.ts';
import { AppError } from '../errors.ts';
import type { RateLimiter } from '../../../platform/rate-limit.ts';
import { AUTH_RATE_RULES, enforceLimit } from '../rate-limits.ts';
import { RESEND_COOLDOWN_MS } from '../registration/service.ts';
import type { RefreshTokenService } from '../sessions/refresh-tokens.ts';
import type { SessionService } from '../sessions/service.ts';
import type { TwoFactorMethod } from '../tables.ts';
import type { AccessTokenIssuer, AccessTokenVerifier } from '../tokens/access-tokens.ts';
import type { OneTimeTokens } from '../tokens/one-time-tokens.ts';
import type { TwoFactorService } from '../two-factor/service.ts';
import type { ClientHashShares } from '../users/hash-shares.ts';
import { hashPassword, verifyPassword } from '../users/passwords.ts';
import type { UserRepository, UserRow } from '../users/repository.ts';
import { assertMaySignIn } from '../users/view.ts';
import type { UserStatusCache } from '../users/status-cache.ts';

export interface ClientInfo {
  ip: string;
  userAgent: string | undefined;
}

export interface SignedIn {
  accessToken: string;
  refreshToken: string;
  /** Seconds the access token lives. */
  expiresIn: number;
  sessionId: string;
  user: UserRow;
}

export type LoginOutcome = { kind: 'signed-in'; session: SignedIn } | { kind: 'two-factor'; tempToken: string; type: TwoFactorMethod };

export interface SignInDeps {
  users: UserRepository;
  sessions: SessionService;
  refreshTokens: RefreshTokenService;
  accessTokens: AccessTokenIssuer;
  verifier: AccessTokenVerifier;
  twoFactor: TwoFactorService;
  oneTimeTokens: OneTimeTokens;
  statuses: UserStatusCache;
  limiter: RateLimiter;
  hashShares: ClientHashShares;
  tempTokenTtlSeconds: number;
}

/** Password sign-in, the second factor, refresh, logout, and the reverse proxy's token check. */
export class SignInService {
  private readonly deps: SignInDeps;
  private dummyHash: Promise<string> | undefined;

  constructor(deps: SignInDeps) {
    this.deps = deps;
  }

  async login(email: string, password: string, client: ClientInfo): Promise<LoginOutcome> {
    // Taken before anything is awaited, so parallel requests of one client count at once.
    const release = this.deps.hashShares.take(client.ip);
    try {
      return await this.checkPassword(email, password, client);
    } finally {
      release();
    }
  }

  private async checkPassword(email: string, password: string, client: ClientInfo): Promise<LoginOutcome> {
    const { users, limiter } = this.deps;
    await enforceLimit(limiter, AUTH_RATE_RULES.loginPerClient, client.ip);
    await enforceLimit(limiter, AUTH_RATE_RULES.login, `${client.ip}|${email.toLowerCase()}`);
    const user = await users.findByEmail(email);
    // Unknown addresses cost one hash too, so timing does not tell which addresses exist.
    const stored = user?.password_hash ?? (await this.unknownUserHash());
    const matches = await verifyPassword(stored, password);
    if (!user || !user.password_hash || !matches) throw new AppError('INVALID_CREDENTIALS');
    return this.signInIdentified(user, client, { requireVerified: true });
  }

  /**
   * Signs in an account whose owner is already identified (by password, or by a social provider):
   * the 403 checks, then the second factor when enabled (e-mail: a code bound to the temp_token is
   * mailed), else a session.
   */
  async signInIdentified(user: UserRow, client: ClientInfo, options: { requireVerified: boolean }): Promise<LoginOutcome> {
    assertMaySignIn(user, options);
    const { twoFactor, oneTimeTokens, tempTokenTtlSeconds } = this.deps;
    const method = await twoFactor.methodOf(user.id);
    if (method) {
      const { token, code } = await oneTimeTokens.issue('two_factor_login', user.id, tempTokenTtlSeconds, { withCode: method === 'email' });
      if (code !== undefined) twoFactor.mailSignInCode(user, code);
      return { kind: 'two-factor', tempToken: token, type: method };
    }
    return { kind: 'signed-in', session: await this.startSession(user, client) };
  }

  /**
   * POST /2fa/email/resend: a new code for an e-mail 2FA sign-in, replacing the previous one, at most
   * every 30 s. Throttled (or a TOTP sign-in) it quietly sends nothing; only a dead temp_token is refused.
   */
  async resendTwoFactorCode(tempToken: string): Promise<void> {
    const { oneTimeTokens, twoFactor, users } = this.deps;
    const row = await oneTimeTokens.find('two_factor_login', tempToken);
    if (!row) throw new AppError('TEMP_TOKEN_EXPIRED');
    if ((await twoFactor.methodOf(row.user_id)) !== 'email') return;
    const code = await oneTimeTokens.replaceCode(row, RESEND_COOLDOWN_MS);
    const user = code === undefined ? undefined : await users.findById(row.user_id);
    if (code !== undefined && user) twoFactor.mailSignInCode(user, code);
  }

  /** POST /2fa/login: 5 wrong codes burn the temp token; a TOTP step, the mailed code or a backup code is accepted once. */
  async completeTwoFactor(tempToken: string, code: string, client: ClientInfo): Promise<SignedIn> {
    const { oneTimeTokens, twoFactor, users } = this.deps;
    const row = await oneTimeTokens.find('two_factor_login', tempToken);
    if (!row) throw new AppError('TEMP_TOKEN_EXPIRED');
    await enforceLimit(this.deps.limiter, AUTH_RATE_RULES.twoFactorCode, String(row.user_id));
    const result = await oneTimeTokens.attempt(row, () => twoFactor.acceptCode(row.user_id, code, row));
    if (result === 'exhausted') throw new AppError('TEMP_TOKEN_EXPIRED');
    if (result === 'rejected') throw new AppError('INVALID_2FA_LOGIN_CODE');
    if (!(await oneTimeTokens.consume(row))) throw new AppError('TEMP_TOKEN_EXPIRED');
    const user = await users.findById(row.user_id);
    if (!user) throw new AppError('TEMP_TOKEN_EXPIRED');
    // The first step already applied its method's verification rule (a Facebook account may be unverified).
    assertMaySignIn(user, { requireVerified: false });
    return this.startSession(user, client, { twoFactorAt: Date.now() });
  }

  async refresh(refreshToken: string): Promise<SignedIn> {
    const { refreshTokens, sessions, users, accessTokens } = this.deps;
    const rotation = await refreshTokens.rotate(refreshToken);
    const user = await users.findById(rotation.userId);
    if (!user) {
      await sessions.revoke(rotation.sessionId);
      throw new AppError('INVALID_TOKEN', 'The account no longer exists');
    }
    try {
      assertMaySignIn(user, { requireVerified: false });
    } catch (error) {
      await sessions.revoke(rotation.sessionId);
      throw error;
    }
    const accessToken = await accessTokens.issue({ userId: user.id, email: user.email, sessionId: rotation.sessionId });
    return { accessToken, refreshToken: rotation.refreshToken, expiresIn: accessTokens.ttl, sessionId: rotation.sessionId, user };
  }

  logout(sessionId: string): Promise<void> {
    return this.deps.sessions.revoke(sessionId);
  }

  /**
   * GET /validate: the caller as the gateway established it, else the presented token verified
   * here; null unless the token is valid and its account active.
   */
  async validate(presented: { identity: { userId: number; email: string } | null; token: string | undefined }): Promise<{ userId: number; email: string } | null> {
    const subject = presented.identity ?? (presented.token ? await this.deps.verifier.verify(presented.token) : null);
    if (!subject) return null;
    return (await this.deps.statuses.isActive(subject.userId)) ? { userId: subject.userId, email: subject.email } : null;
  }

  private async startSession(user: UserRow, client: ClientInfo, secondFactor: { twoFactorAt?: number } = {}): Promise<SignedIn> {
    const { sessions, accessTokens, refreshTokens } = this.deps;
    const sessionId = await sessions.start({ userId: user.id, ip: client.ip, userAgent: client.userAgent ?? null, ...secondFactor });
    const accessToken = await accessTokens.issue({ userId: user.id, email: user.email, sessionId });
    const refreshToken = await refreshTokens.issue(sessionId, user.id);
    return { accessToken, refreshToken, expiresIn: accessTokens.ttl, sessionId, user };
  }

  private unknownUserHash(): Promise<string> {
    this.dummyHash ??= hashPassword(randomToken(16));
    return this.dummyHash;
  }
}
