import type { EventBus } from '../../../platform/bus.ts';
import { FOLLOWED_TTL_MS, UserAccessCache } from './access-cache.ts';
import type { UserRepository, UserRow } from './repository.ts';

/**
 * What other modules may know of a user: identity and the flags that govern access. Directories
 * cache it, so every write of one of these fields publishes 'auth.user.changed'.
 */
export interface UserAccess {
  id: number;
  email: string;
  name: string | null;
  administrator: boolean;
  disabled: boolean;
  readonly: boolean;
  deviceReadonly: boolean;
  limitCommands: boolean;
  /** Epoch milliseconds, or null for never. */
  expirationTime: number | null;
}

/** The auth module's interface for looking users up; in split mode an HTTP client implements it. */
export interface UserDirectory {
  get(id: number): Promise<UserAccess | undefined>;
  findByEmail(email: string): Promise<UserAccess | undefined>;
}

/** A directory that remembers users, so a caller on a hot path (the gateway) can ask without a promise. */
export interface CachingUserDirectory extends UserDirectory {
  /** The user as remembered now; undefined when not in memory (then call get). */
  peek(id: number): UserAccess | undefined;
}

export function toUserAccess(row: UserRow): UserAccess {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    administrator: row.administrator === 1,
    disabled: row.disabled === 1,
    readonly: row.readonly === 1,
    deviceReadonly: row.device_readonly === 1,
    limitCommands: row.limit_commands === 1,
    expirationTime: row.expiration_time,
  };
}

/** Every device and tracking request asks who its caller is: answered from memory, dropped when the user changes. */
export class LocalUserDirectory implements CachingUserDirectory {
  private readonly users: UserRepository;
  private readonly cache = new UserAccessCache(FOLLOWED_TTL_MS);

  constructor(users: UserRepository, bus: EventBus) {
    this.users = users;
    this.cache.follow(bus);
  }

  get(id: number): Promise<UserAccess | undefined> {
    return this.cache.get(id, async () => {
      const row = await this.users.findById(id);
      return row && toUserAccess(row);
    });
  }

  peek(id: number): UserAccess | undefined {
    return this.cache.peek(id);
  }

  findByEmail(email: string): Promise<UserAccess | undefined> {
    return this.cache.findByEmail(email, async () => {
      const row = await this.users.findByEmail(email);
      return row && toUserAccess(row);
    });
  }
}
