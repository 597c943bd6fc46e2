import type { TestLogin, TestServer } from '../../support/server.ts';

export interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON bodies are asserted field by field
  body: any;
  headers: Record<string, unknown>;
}

/** HTTP through the gateway, as one signed-in user (or anonymously). */
export class Client {
  private readonly server: Pick<TestServer, 'app'>;
  private readonly login: Pick<TestLogin, 'userId' | 'authorization'> | undefined;
  private readonly remoteAddress: string | undefined;

  constructor(server: Pick<TestServer, 'app'>, login?: Pick<TestLogin, 'userId' | 'authorization'>, remoteAddress?: string) {
    this.server = server;
    this.login = login;
    this.remoteAddress = remoteAddress;
  }

  get userId(): number {
    if (!this.login) throw new Error('anonymous client');
    return this.login.userId;
  }

  async request(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown): Promise<Reply> {
    const response = await this.server.app.inject({
      method,
      url,
      headers: { ...(this.login?.authorization ?? {}), ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(payload === undefined ? {} : { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }),
      ...(this.remoteAddress ? { remoteAddress: this.remoteAddress } : {}),
    });
    return { status: response.statusCode, body: response.body ? response.json() : undefined, headers: response.headers };
  }

  get(url: string): Promise<Reply> {
    return this.request('GET', url);
  }
  post(url: string, payload?: unknown): Promise<Reply> {
    return this.request('POST', url, payload);
  }
  put(url: string, payload?: unknown): Promise<Reply> {
    return this.request('PUT', url, payload);
  }
  delete(url: string): Promise<Reply> {
    return this.request('DELETE', url);
  }
}

/**
 * Sets an account's access flags. The auth module owns the users table; tests set the flags
 * directly so they depend only on the committed users schema, then announce the change as the
 * auth module does, so cached users are read again.
 */
export async function setUserFlags(server: TestServer, userId: number, flags: { readonly?: boolean; deviceReadonly?: boolean }): Promise<void> {
  const changes: Record<string, number> = {};
  if (flags.readonly !== undefined) changes.readonly = flags.readonly ? 1 : 0;
  if (flags.deviceReadonly !== undefined) changes.device_readonly = flags.deviceReadonly ? 1 : 0;
  await server.database!.db.updateTable('users').set(changes).where('id', '=', userId).execute();
  await server.bus.publish('auth.user.changed', { userId });
}

/** A snapshot of every row the module owns, to prove a refused request changed nothing at all. */
export async function snapshot(server: TestServer): Promise<unknown> {
  const db = server.database!.db;
  return {
    devices: await db.selectFrom('devices').selectAll().orderBy('id').execute(),
    shares: await db.selectFrom('device_shares').selectAll().orderBy('device_id').orderBy('user_id').execute(),
    invitations: await db.selectFrom('device_invitations').selectAll().orderBy('device_id').orderBy('email').execute(),
    tokens: await db.selectFrom('claim_tokens').selectAll().orderBy('token').execute(),
  };
}

let sequence = 0;
/** A uniqueId no other test uses. */
export function uniqueId(prefix = 'dev'): string {
  sequence += 1;
  return `${prefix}-${process.pid}-${sequence}`;
}
