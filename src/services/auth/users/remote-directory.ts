import { Agent, request } from 'undici';
import type { EventBus } from '../../../platform/bus.ts';
import { IDENTITY_HEADERS } from '../../../platform/http/identity.ts';
import { CachedUserDirectory, FOLLOWED_TTL_MS, UNFOLLOWED_TTL_MS } from './directory.ts';
import type { UserAccess } from './directory.ts';

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
export class RemoteUserDirectory extends CachedUserDirectory {
  private readonly agent: Agent;

  constructor(options: RemoteUserDirectoryOptions) {
    const authUrl = options.authUrl.replace(/\/$/, '');
    const agent = new Agent({ connections: 32, keepAliveTimeout: 30_000 });
    const read = (path: string) => readUser(agent, `${authUrl}${path}`, options.internalToken, options.timeoutMs ?? 5000);
    super(
      {
        byId: (id) => read(`/api/auth/internal/users/${encodeURIComponent(String(id))}`),
        byEmail: (address) => read(`/api/auth/internal/users?email=${encodeURIComponent(address)}`),
      },
      options.changes ? FOLLOWED_TTL_MS : UNFOLLOWED_TTL_MS,
      options.changes,
    );
    this.agent = agent;
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

async function readUser(agent: Agent, url: string, internalToken: string, timeoutMs: number): Promise<UserAccess | undefined> {
  const response = await request(url, {
    dispatcher: agent,
    headers: { [IDENTITY_HEADERS.internalToken]: internalToken, accept: 'application/json' },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  if (response.statusCode === 404) {
    await response.body.dump();
    return undefined;
  }
  if (response.statusCode !== 200) {
    await response.body.dump();
    throw new Error(`the auth service answered ${response.statusCode} for ${new URL(url).pathname}`);
  }
  return (await response.body.json()) as UserAccess;
}
