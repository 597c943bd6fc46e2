import type { EventBus } from '../../../platform/bus.ts';
import { ReadThroughCache } from '../../../platform/cache.ts';
import { unavailable } from '../../../platform/http/errors.ts';
import { AppError } from '../errors.ts';
import type { UserRepository, UserRow } from './repository.ts';
import { accessFlags, storedAttributes } from './view.ts';

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
  /** The user's `attributes.language` and `attributes.timezone` (notifications speak and tell time in them), or null. */
  language: string | null;
  timezone: string | null;
}

/** The auth module's interface for looking users up; in split mode an HTTP client implements it. */
export interface UserDirectory {
  get(id: number): Promise<UserAccess | undefined>;
  findByEmail(email: string): Promise<UserAccess | undefined>;
}

/** The user behind a request, as the directory knows them; 401 when the account no longer exists. */
export async function requireUser(users: UserDirectory, userId: number): Promise<UserAccess> {
  const user = await users.get(userId);
  if (!user) throw new AppError('UNAUTHORIZED', 'The account no longer exists');
  return user;
}

/** The directory of a process without the auth module, until one that reaches the auth service is passed in. */
export const unavailableUserDirectory: UserDirectory = {
  get: unavailable('user directory of the auth service'),
  findByEmail: unavailable('user directory of the auth service'),
};

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
    ...accessFlags(row),
    expirationTime: row.expiration_time,
    ...localeOf(row),
  };
}

function localeOf(row: UserRow): { language: string | null; timezone: string | null } {
  const { language, timezone } = storedAttributes(row);
  return { language: typeof language === 'string' ? language : null, timezone: typeof timezone === 'string' ? timezone : null };
}

/** Users a directory remembers; beyond this the least recently used go first. */
const MAX_USERS = 100_000;

/**
 * How long a user is remembered when the change events reach the directory. They drop users at
 * once; this only bounds what a lost event leaves behind (Redis pub/sub drops messages while a
 * connection is down).
 */
export const FOLLOWED_TTL_MS = 60_000;

/** How long a user is remembered when no change event can reach the directory (split mode without Redis). */
export const UNFOLLOWED_TTL_MS = 2_000;

/** Where a caching directory reads the users it does not remember. */
export interface UserReads {
  byId(id: number): Promise<UserAccess | undefined>;
  /** `address` is lower case. */
  byEmail(address: string): Promise<UserAccess | undefined>;
}

/**
 * UserAccess by id (and by address), remembered until the user changes: every write of a field
 * UserAccess carries publishes 'auth.user.changed' (a deletion 'auth.user.deleted'), and the bus
 * delivers both to every process when Redis connects them. Unknown users are not remembered, so an
 * account created a moment ago is found at once.
 */
export class CachedUserDirectory implements CachingUserDirectory {
  readonly #cache: ReadThroughCache<number, UserAccess | undefined, string>;
  readonly #readById: (id: number) => Promise<UserAccess | undefined>;
  readonly #readByEmail: (address: string) => Promise<UserAccess | undefined>;

  /** `changes`: the bus that announces changes of users, when one reaches this process. */
  constructor(reads: UserReads, ttlMs: number, changes?: EventBus) {
    this.#cache = new ReadThroughCache({ ttlMs, maxEntries: MAX_USERS, indexBy: (user) => [user.email] });
    // Shared by every caller once remembered: none may change it.
    this.#readById = async (id) => frozen(await reads.byId(id));
    this.#readByEmail = async (address) => frozen(await reads.byEmail(address));
    if (changes) {
      this.#cache.invalidateOn(changes, 'auth.user.changed', ({ userId }) => userId);
      this.#cache.invalidateOn(changes, 'auth.user.deleted', ({ userId }) => userId);
    }
  }

  get(id: number): Promise<UserAccess | undefined> {
    return this.#cache.get(id, this.#readById);
  }

  peek(id: number): UserAccess | undefined {
    return this.#cache.peek(id);
  }

  findByEmail(email: string): Promise<UserAccess | undefined> {
    return this.#cache.getBy(email.toLowerCase(), this.#readByEmail, idOf);
  }
}

function frozen(user: UserAccess | undefined): UserAccess | undefined {
  return user && Object.freeze(user);
}

function idOf(user: UserAccess): number {
  return user.id;
}

/** Every device and tracking request asks who its caller is: answered from memory, dropped when the user changes. */
export class LocalUserDirectory extends CachedUserDirectory {
  constructor(users: UserRepository, bus: EventBus) {
    const found = (row: UserRow | undefined) => row && toUserAccess(row);
    super({ byId: async (id) => found(await users.findById(id)), byEmail: async (address) => found(await users.findByEmail(address)) }, FOLLOWED_TTL_MS, bus);
  }
}
