import type { EventBus } from '../../../platform/bus.ts';
import type { SessionService } from '../sessions/service.ts';
import { hashPassword } from './passwords.ts';
import type { UserRepository, UserRow } from './repository.ts';

export interface NewAccount {
  email: string;
  password?: string;
  name?: string | null;
  administrator?: boolean;
  /** Accounts made by an administrator or a verified provider start verified. */
  emailVerified?: boolean;
}

/** Account lifecycle: creation and deletion, with the domain events other modules follow. */
export class AccountService {
  private readonly users: UserRepository;
  private readonly sessions: SessionService;
  private readonly bus: EventBus;

  constructor(users: UserRepository, sessions: SessionService, bus: EventBus) {
    this.users = users;
    this.sessions = sessions;
    this.bus = bus;
  }

  async create(account: NewAccount): Promise<UserRow> {
    const now = Date.now();
    return this.users.insert({
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
      attributes: '{}',
      email_verified_at: account.emailVerified ? now : null,
      created_at: now,
      updated_at: now,
    });
  }

  /** Revokes every session, removes the account, then lets the other modules remove what the user owned. */
  async delete(userId: number): Promise<void> {
    await this.sessions.revokeAllOfUser(userId);
    await this.users.delete(userId);
    await this.bus.publish('auth.user.deleted', { userId });
  }
}
