import type { EventBus } from '../../../platform/bus.ts';
import { AppError } from '../errors.ts';
import type { SessionService } from '../sessions/service.ts';
import type { TwoFactorService } from '../two-factor/service.ts';
import type { UserRepository, UserRow } from '../users/repository.ts';
import type { UserStatusCache } from '../users/status-cache.ts';
import { toUserView } from '../users/view.ts';
import type { UserView } from '../users/view.ts';
import type { AccessChanges, UserPage } from '../../../client/types.ts';

export interface UserAdminDeps {
  users: UserRepository;
  sessions: SessionService;
  twoFactor: TwoFactorService;
  statuses: UserStatusCache;
  bus: EventBus;
}

/** The administrators' view of accounts and the flags that govern access. */
export class UserAdminService {
  private readonly deps: UserAdminDeps;
  constructor(deps: UserAdminDeps) {
    this.deps = deps;
  }

  async list(query: { search?: string; page: number; limit: number }): Promise<UserPage> {
    const { rows, total } = await this.deps.users.list({ search: query.search, offset: (query.page - 1) * query.limit, limit: query.limit });
    const withTwoFactor = await this.deps.twoFactor.enabledAmong(rows.map((row) => row.id));
    return {
      users: rows.map((row) => toUserView(row, { twoFactorEnabled: withTwoFactor.has(row.id) })),
      total,
      page: query.page,
      limit: query.limit,
    };
  }

  async get(userId: number): Promise<UserView> {
    return this.view(await this.existing(userId));
  }

  /** Disabling, or an expiration time already past, ends the user's sessions at once. */
  async update(callerId: number, userId: number, changes: AccessChanges): Promise<UserView> {
    await this.existing(userId);
    const expirationTime = changes.expirationTime === undefined ? undefined : changes.expirationTime === null ? null : Date.parse(changes.expirationTime);
    const now = Date.now();
    const expires = expirationTime !== undefined && expirationTime !== null;
    const locksOut = changes.disabled === true || changes.administrator === false || expires;
    if (callerId === userId && locksOut) throw new AppError('CANNOT_CHANGE_OWN_ACCESS');
    const updated = await this.deps.users.update(userId, {
      ...flag('administrator', changes.administrator),
      ...flag('disabled', changes.disabled),
      ...flag('readonly', changes.readonly),
      ...flag('device_readonly', changes.deviceReadonly),
      ...flag('limit_commands', changes.limitCommands),
      ...(expirationTime !== undefined ? { expiration_time: expirationTime } : {}),
      updated_at: now,
    });
    if (!updated) throw new AppError('USER_NOT_FOUND');
    this.deps.statuses.forget(userId);
    await this.deps.bus.publish('auth.user.changed', { userId });
    if (changes.disabled === true || (expires && expirationTime <= now)) await this.deps.sessions.revokeAllOfUser(userId);
    return this.view(updated);
  }

  private async view(row: UserRow): Promise<UserView> {
    return toUserView(row, { twoFactorEnabled: await this.deps.twoFactor.isEnabled(row.id) });
  }

  private async existing(userId: number): Promise<UserRow> {
    const user = await this.deps.users.findById(userId);
    if (!user) throw new AppError('USER_NOT_FOUND');
    return user;
  }
}

function flag<K extends string>(column: K, value: boolean | undefined): Partial<Record<K, number>> {
  return value === undefined ? {} : ({ [column]: value ? 1 : 0 } as Record<K, number>);
}
