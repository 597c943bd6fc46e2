import type { EventBus } from '../../../platform/bus.ts';
import type { UserAccess } from './directory.ts';

/** Users a directory remembers; beyond this the oldest entry goes first. */
const MAX_ENTRIES = 100_000;

/**
 * How long an entry lives when the change events reach the directory. They drop entries at once;
 * this only bounds what a lost event leaves behind (Redis pub/sub drops messages while a
 * connection is down).
 */
export const FOLLOWED_TTL_MS = 60_000;

/** How long an entry lives when no change event can reach the directory (split mode without Redis). */
export const UNFOLLOWED_TTL_MS = 2_000;

interface Entry {
  user: UserAccess;
  until: number;
}

/**
 * UserAccess by id (and the id by e-mail address), kept until the user changes: every write of a
 * field UserAccess carries publishes 'auth.user.changed' (a deletion 'auth.user.deleted'), and the
 * bus delivers both to every process when Redis connects them. Unknown users are not remembered,
 * so an account created a moment ago is found at once.
 */
export class UserAccessCache {
  private readonly byId = new Map<number, Entry>();
  private readonly idByEmail = new Map<string, number>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  /**
   * Counts forgets. A lookup that saw it move may have read the user before the change that
   * caused it, so its answer is returned but not kept.
   */
  private generation = 0;

  constructor(ttlMs: number, maxEntries = MAX_ENTRIES) {
    this.ttlMs = ttlMs;
    this.maxEntries = maxEntries;
  }

  /** Drops a user when this bus announces a change or a deletion. */
  follow(bus: EventBus): void {
    bus.on('auth.user.changed', ({ userId }) => this.forget(userId));
    bus.on('auth.user.deleted', ({ userId }) => this.forget(userId));
  }

  get(id: number, load: () => Promise<UserAccess | undefined>): Promise<UserAccess | undefined> {
    const remembered = this.peek(id);
    return remembered ? Promise.resolve(remembered) : this.load(load);
  }

  /** The user as remembered now, without a promise; undefined when not remembered. */
  peek(id: number): UserAccess | undefined {
    const entry = this.byId.get(id);
    return entry && entry.until > Date.now() ? entry.user : undefined;
  }

  findByEmail(email: string, load: () => Promise<UserAccess | undefined>): Promise<UserAccess | undefined> {
    const address = email.toLowerCase();
    const id = this.idByEmail.get(address);
    const entry = id === undefined ? undefined : this.byId.get(id);
    if (entry && entry.until > Date.now() && entry.user.email === address) return Promise.resolve(entry.user);
    return this.load(load);
  }

  forget(userId: number): void {
    this.generation += 1;
    this.drop(userId);
  }

  private async load(load: () => Promise<UserAccess | undefined>): Promise<UserAccess | undefined> {
    const generation = this.generation;
    const user = await load();
    if (user && generation === this.generation) this.remember(user);
    return user;
  }

  private remember(user: UserAccess): void {
    this.drop(user.id);
    // Shared by every caller from now on: none may change it.
    this.byId.set(user.id, { user: Object.freeze(user), until: Date.now() + this.ttlMs });
    this.idByEmail.set(user.email, user.id);
    if (this.byId.size > this.maxEntries) this.drop(this.byId.keys().next().value as number);
  }

  private drop(userId: number): void {
    const entry = this.byId.get(userId);
    if (!entry) return;
    this.byId.delete(userId);
    if (this.idByEmail.get(entry.user.email) === userId) this.idByEmail.delete(entry.user.email);
  }
}
