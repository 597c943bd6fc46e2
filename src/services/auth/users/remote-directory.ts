import type { EventBus } from '../../../platform/bus.ts';
import type { InternalClient } from '../../../platform/http/internal-client.ts';
import { FOLLOWED_TTL_MS, UNFOLLOWED_TTL_MS, UserAccessCache } from './access-cache.ts';
import type { CachingUserDirectory, UserAccess } from './directory.ts';

export interface RemoteUserDirectoryOptions {
  /** Reaches the auth service (AUTH_URL); its owner closes it. */
  client: InternalClient;
  /**
   * This process's bus, only when Redis connects it to the auth service's processes: their
   * 'auth.user.changed' and 'auth.user.deleted' events then drop cached users at once. Without it
   * a cached user is asked again after 2 seconds, the most an administrator's change can take to show.
   */
  changes?: EventBus;
}

/**
 * UserDirectory over HTTP for split mode: the auth service's internal user routes, with the
 * internal token. Answers are cached like the local directory's (see `changes`).
 */
export class RemoteUserDirectory implements CachingUserDirectory {
  private readonly client: InternalClient;
  private readonly cache: UserAccessCache;

  constructor(options: RemoteUserDirectoryOptions) {
    this.client = options.client;
    this.cache = new UserAccessCache(options.changes ? FOLLOWED_TTL_MS : UNFOLLOWED_TTL_MS);
    if (options.changes) this.cache.follow(options.changes);
  }

  get(id: number): Promise<UserAccess | undefined> {
    return this.cache.get(id, () => this.fetch(`/api/auth/internal/users/${encodeURIComponent(String(id))}`));
  }

  peek(id: number): UserAccess | undefined {
    return this.cache.peek(id);
  }

  findByEmail(email: string): Promise<UserAccess | undefined> {
    return this.cache.findByEmail(email, () => this.fetch(`/api/auth/internal/users?email=${encodeURIComponent(email)}`));
  }

  private fetch(path: string): Promise<UserAccess | undefined> {
    return this.client.jsonOrNone<UserAccess>(path);
  }
}
