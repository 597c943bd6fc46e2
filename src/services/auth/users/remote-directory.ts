import { Agent, request } from 'undici';
import type { EventBus } from '../../../platform/bus.ts';
import { IDENTITY_HEADERS } from '../../../platform/http/identity.ts';
import { FOLLOWED_TTL_MS, UNFOLLOWED_TTL_MS, UserAccessCache } from './access-cache.ts';
import type { CachingUserDirectory, UserAccess } from './directory.ts';

export interface RemoteUserDirectoryOptions {
  /** Base URL of the auth service, e.g. http://auth:8080. */
  authUrl: string;
  internalToken: string;
  timeoutMs?: number;
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
  private readonly authUrl: string;
  private readonly internalToken: string;
  private readonly agent: Agent;
  private readonly timeoutMs: number;
  private readonly cache: UserAccessCache;

  constructor(options: RemoteUserDirectoryOptions) {
    this.authUrl = options.authUrl.replace(/\/$/, '');
    this.internalToken = options.internalToken;
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.agent = new Agent({ connections: 32, keepAliveTimeout: 30_000 });
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

  close(): Promise<void> {
    return this.agent.close();
  }

  private async fetch(path: string): Promise<UserAccess | undefined> {
    const response = await request(`${this.authUrl}${path}`, {
      dispatcher: this.agent,
      headers: { [IDENTITY_HEADERS.internalToken]: this.internalToken, accept: 'application/json' },
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
    });
    if (response.statusCode === 404) {
      await response.body.dump();
      return undefined;
    }
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new Error(`the auth service answered ${response.statusCode} for ${path.split('?')[0]}`);
    }
    return (await response.body.json()) as UserAccess;
  }
}
