import type { EventBus } from '../../../platform/bus.ts';
import type { InternalClient } from '../../../platform/http/internal-client.ts';
import { CachedUserDirectory, FOLLOWED_TTL_MS, UNFOLLOWED_TTL_MS } from './directory.ts';
import type { UserAccess } from './directory.ts';

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
export class RemoteUserDirectory extends CachedUserDirectory {
  constructor(options: RemoteUserDirectoryOptions) {
    const read = (path: string) => options.client.jsonOrNone<UserAccess>(path);
    super(
      {
        byId: (id) => read(`/api/auth/internal/users/${encodeURIComponent(String(id))}`),
        byEmail: (address) => read(`/api/auth/internal/users?email=${encodeURIComponent(address)}`),
      },
      options.changes ? FOLLOWED_TTL_MS : UNFOLLOWED_TTL_MS,
      options.changes,
    );
  }
}
