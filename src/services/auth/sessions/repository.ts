import type { Kysely } from 'kysely';
import type { AuthTables } from '../tables.ts';

export interface NewSession {
  id: string;
  userId: number;
  createdAt: number;
  expiresAt: number;
  ip: string | null;
  userAgent: string | null;
}

export class SessionRepository {
  private readonly db: Kysely<AuthTables>;
  constructor(db: Kysely<AuthTables>) {
    this.db = db;
  }

  async insert(session: NewSession): Promise<void> {
    await this.db
      .insertInto('sessions')
      .values({
        id: session.id,
        user_id: session.userId,
        created_at: session.createdAt,
        expires_at: session.expiresAt,
        revoked_at: null,
        ip: session.ip,
        user_agent: session.userAgent,
      })
      .execute();
  }

  async findActive(id: string, now: number) {
    return this.db
      .selectFrom('sessions')
      .selectAll()
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
  }

  /** Marks the given live sessions revoked and returns the ids that were live. */
  async revoke(ids: string[], now: number): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .updateTable('sessions')
      .set({ revoked_at: now })
      .where('id', 'in', ids)
      .where('revoked_at', 'is', null)
      .returning('id')
      .execute();
    return rows.map((row) => row.id);
  }

  async revokeAllOfUser(userId: number, now: number, exceptId?: string): Promise<string[]> {
    let query = this.db
      .updateTable('sessions')
      .set({ revoked_at: now })
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null);
    if (exceptId) query = query.where('id', '!=', exceptId);
    const rows = await query.returning('id').execute();
    return rows.map((row) => row.id);
  }

  async revokedSince(since: number) {
    return this.db
      .selectFrom('sessions')
      .select(['id', 'revoked_at'])
      .where('revoked_at', '>=', since)
      .orderBy('revoked_at')
      .execute();
  }
}
