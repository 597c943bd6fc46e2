import type { EventBus } from '../../../platform/bus.ts';
import { AppError } from '../errors.ts';
import type { RateLimiter } from '../../../platform/rate-limit.ts';
import { AUTH_RATE_RULES, enforceLimit } from '../rate-limits.ts';
import type { SessionService } from '../sessions/service.ts';
import type { TwoFactorService } from '../two-factor/service.ts';
import { passwordProblem } from '../users/password-policy.ts';
import { hashPassword, verifyPassword } from '../users/passwords.ts';
import type { UserRepository, UserRow } from '../users/repository.ts';
import type { AccountService } from '../users/service.ts';
import type { UserStatusCache } from '../users/status-cache.ts';
import { storedAttributes, toUserView } from '../users/view.ts';
import type { UserView } from '../users/view.ts';

/** PUT /profile: absent fields stay, null clears. timezone, language and the unit choices live in attributes. */
export interface ProfileChanges {
  name?: string | null;
  phone?: string | null;
  timezone?: string | null;
  language?: string | null;
  /** Speeds and distances as the web app shows them (Traccar's attribute names and values). */
  speedUnit?: 'kmh' | 'mph' | 'kn' | null;
  distanceUnit?: 'km' | 'mi' | null;
}

export interface ProfileDeps {
  users: UserRepository;
  accounts: AccountService;
  sessions: SessionService;
  twoFactor: TwoFactorService;
  statuses: UserStatusCache;
  limiter: RateLimiter;
  bus: EventBus;
}

/** What a signed-in user does with their own account. */
export class ProfileService {
  private readonly deps: ProfileDeps;
  constructor(deps: ProfileDeps) {
    this.deps = deps;
  }

  async view(row: UserRow): Promise<UserView> {
    return toUserView(row, { twoFactorEnabled: await this.deps.twoFactor.isEnabled(row.id) });
  }

  async get(userId: number): Promise<UserView> {
    return this.view(await this.existing(userId));
  }

  async update(userId: number, changes: ProfileChanges): Promise<UserView> {
    const user = await this.existing(userId);
    if (user.readonly === 1) throw new AppError('ACCOUNT_READONLY');
    const attributes = storedAttributes(user);
    if (changes.timezone !== undefined) setOrClear(attributes, 'timezone', changes.timezone === null ? null : timeZone(changes.timezone));
    if (changes.language !== undefined) setOrClear(attributes, 'language', changes.language === null ? null : language(changes.language));
    if (changes.speedUnit !== undefined) setOrClear(attributes, 'speedUnit', changes.speedUnit);
    if (changes.distanceUnit !== undefined) setOrClear(attributes, 'distanceUnit', changes.distanceUnit);
    const updated = await this.deps.users.update(userId, {
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.phone !== undefined ? { phone: changes.phone } : {}),
      attributes: JSON.stringify(attributes),
      updated_at: Date.now(),
    });
    // The name is part of UserAccess.
    if (updated) await this.deps.bus.publish('auth.user.changed', { userId });
    return this.view(updated ?? user);
  }

  /** Ends the user's other sessions; the one that asked stays signed in. */
  async changePassword(identity: { userId: number; sessionId: string }, currentPassword: string, newPassword: string): Promise<{ message: string }> {
    const { users, sessions, limiter } = this.deps;
    await enforceLimit(limiter, AUTH_RATE_RULES.changePassword, String(identity.userId));
    const user = await this.existing(identity.userId);
    if (!user.password_hash || !(await verifyPassword(user.password_hash, currentPassword))) throw new AppError('INVALID_CURRENT_PASSWORD');
    const problem = passwordProblem(newPassword);
    if (problem) throw new AppError('WEAK_PASSWORD', problem);
    await users.update(user.id, { password_hash: await hashPassword(newPassword), updated_at: Date.now() });
    await sessions.revokeAllOfUser(user.id, { except: identity.sessionId });
    return { message: 'Password changed; your other sessions have been signed out' };
  }

  /** The last administrator who can sign in may not leave: nobody could administer the deployment. */
  async deleteAccount(userId: number): Promise<void> {
    const user = await this.existing(userId);
    if (user.administrator === 1 && (await this.deps.users.countActiveAdministrators(Date.now(), userId)) === 0) {
      throw new AppError('LAST_ADMINISTRATOR');
    }
    await this.deps.accounts.delete(userId);
    this.deps.statuses.forget(userId);
  }

  private async existing(userId: number): Promise<UserRow> {
    const user = await this.deps.users.findById(userId);
    if (!user) throw new AppError('USER_NOT_FOUND');
    return user;
  }
}

function setOrClear(attributes: Record<string, unknown>, key: string, value: string | null): void {
  if (value === null) delete attributes[key];
  else attributes[key] = value;
}

function timeZone(value: string): string {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: value }).resolvedOptions().timeZone;
  } catch {
    throw invalid('/body/timezone', `'${value}' is not an IANA time zone such as Europe/Berlin`);
  }
}

function language(value: string): string {
  try {
    const [canonical] = Intl.getCanonicalLocales(value);
    if (canonical) return canonical;
  } catch {
    // reported below
  }
  throw invalid('/body/language', `'${value}' is not a language tag such as en or pt-BR`);
}

function invalid(path: string, message: string): AppError {
  return new AppError('VALIDATION_FAILED', `${path} ${message}`, { details: [{ path, message }] });
}
