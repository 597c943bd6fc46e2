import type { Insertable } from 'kysely';
import type { EventBus } from '../../../platform/bus.ts';
import type { FactRecorder } from '../../../platform/outbox/outbox.ts';
import type { SessionService } from '../sessions/service.ts';
import type { UsersTable } from '../tables.ts';
import { hashPassword } from './passwords.ts';
import { isUniqueViolation } from './repository.ts';
import type { UserRepository, UserRow } from './repository.ts';

export interface NewAccount {
  email: string;
  password?: string;
  name?: string | null;
  administrator?: boolean;
  /** Accounts made by an administrator or a verified provider start verified. */
  emailVerified?: boolean;
  attributes?: Record<string, unknown>;
}

export interface AdministratorStart {
  user: UserRow;
  /** restored: an administrator re-enabled; replaced: a non-administrator's account deleted and a new administrator created. */
  outcome: 'created' | 'unchanged' | 'restored' | 'replaced';
  /** The deleted account, when replaced. */
  replacedUserId?: number;
}

/** Account lifecycle: creation and deletion, with the domain events other modules follow. */
export class AccountService {
  private readonly users: UserRepository;
  private readonly sessions: SessionService;
  private readonly bus: EventBus;
  private readonly facts: FactRecorder;

  constructor(users: UserRepository, sessions: SessionService, bus: EventBus, facts: FactRecorder) {
    this.users = users;
    this.sessions = sessions;
    this.bus = bus;
    this.facts = facts;
  }

  async create(account: NewAccount): Promise<UserRow> {
    return this.users.insert(await newUserRow(account));
  }

  /**
   * ADMIN_EMAIL/ADMIN_PASSWORD at start. Absent: created, verified. An administrator already: made enabled, verified
   * and non-expiring, credentials untouched (an administrator chose them). Any other account was registered by someone
   * the operator never vouched for: it is deleted as its owner would delete it (sessions revoked, the user-deleted fact
   * for every module to remove what it made) and a new administrator with a new id takes the address, in one
   * transaction.
   */
  async ensureAdministrator(email: string, password: string): Promise<AdministratorStart> {
    const existing = await this.users.findByEmail(email);
    if (!existing) {
      try {
        return { user: await this.create({ email, password, administrator: true, emailVerified: true }), outcome: 'created' };
      } catch (error) {
        // Another instance starting beside this one created it first.
        if (!isUniqueViolation(error)) throw error;
        return this.ensureAdministrator(email, password);
      }
    }
    if (existing.administrator === 0) {
      const replacement = await newUserRow({ email, password, administrator: true, emailVerified: true });
      await this.sessions.revokeAllOfUser(existing.id);
      const user = await this.users.replace(existing.id, replacement, this.facts);
      // Gone already: another instance starting beside this one replaced it first.
      if (!user) return this.ensureAdministrator(email, password);
      await this.bus.publish('auth.user.deleted', { userId: existing.id });
      return { user, outcome: 'replaced', replacedUserId: existing.id };
    }
    if (existing.disabled === 0 && existing.email_verified_at !== null && existing.expiration_time === null) {
      return { user: existing, outcome: 'unchanged' };
    }
    const now = Date.now();
    const updated = await this.users.update(existing.id, {
      disabled: 0,
      expiration_time: null,
      email_verified_at: existing.email_verified_at ?? now,
      updated_at: now,
    });
    await this.bus.publish('auth.user.changed', { userId: existing.id });
    return { user: updated ?? existing, outcome: 'restored' };
  }

  /**
   * Revokes every session and removes the account with its credentials. The other modules remove
   * what the user owned from the durable fact; the hint after it clears caches at once.
   */
  async delete(userId: number): Promise<void> {
    await this.sessions.revokeAllOfUser(userId);
    if (await this.users.deleteWithCredentials(userId, this.facts)) await this.bus.publish('auth.user.deleted', { userId });
  }
}

async function newUserRow(account: NewAccount): Promise<Insertable<UsersTable>> {
  const now = Date.now();
  return {
    email: account.email,
    password_hash: account.password ? await hashPassword(account.password) : null,
    name: account.name ?? null,
    phone: null,
    administrator: account.administrator ? 1 : 0,
    disabled: 0,
    readonly: 0,
    device_readonly: 0,
    limit_commands: 0,
    expiration_time: null,
    attributes: JSON.stringify(account.attributes ?? {}),
    email_verified_at: account.emailVerified ? now : null,
    created_at: now,
    updated_at: now,
  };
}
