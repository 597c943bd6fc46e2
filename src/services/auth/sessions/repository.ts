import type { Kysely } from 'kysely';
import { TableAccess } from '../../../platform/db/table-access.ts';
import type { AuthTables } from '../tables.ts';

export interface NewSession {
  id: string;
  userId: number;
  createdAt: number;
  expiresAt: number;
  ip: string | null;
  userAgent: string | null;
  twoFactorAt: number | null;
}

export class SessionRepository extends TableAccess<AuthTables> {
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
        two_factor_at: session.twoFactorAt,
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

  async extend(id: string, expiresAt: number): Promise<void> {
    await this.db.updateTable('sessions').set({ expires_at: expiresAt }).where('id', '=', id).execute();
  }

  /** Deletes sessions that ended before `before`, with their refresh tokens; their access tokens have expired too. */
  async purgeEndedBefore(before: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const ended = trx
        .selectFrom('sessions')
        .select('id')
        .where((eb) => eb.or([eb('expires_at', '<', before), eb('revoked_at', '<', before)]));
      await trx.deleteFrom('refresh_tokens').where('session_id', 'in', ended).execute();
      await trx.deleteFrom('sessions').where((eb) => eb.or([eb('expires_at', '<', before), eb('revoked_at', '<', before)])).execute();
    });
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

export interface NewRefreshToken {
  tokenHash: string;
  sessionId: string;
  userId: number;
  createdAt: number;
  expiresAt: number;
}

export class RefreshTokenRepository extends TableAccess<AuthTables> {
  insert(token: NewRefreshToken): Promise<void> {
    return insertToken(this.db, token);
  }

  find(tokenHash: string) {
    return this.db.selectFrom('refresh_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
  }

  /**
   * Marks the token rotated and stores its successor in one transaction, so whoever sees the token
   * rotated finds the successor stored too. False when another request rotated it first.
   */
  async rotate(tokenHash: string, successor: NewRefreshToken, now: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable('refresh_tokens')
        .set({ rotated_at: now })
        .where('token_hash', '=', tokenHash)
        .where('rotated_at', 'is', null)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
      await insertToken(trx, successor);
      return true;
    });
  }
}

async function insertToken(db: Kysely<AuthTables>, token: NewRefreshToken): Promise<void> {
  await db
    .insertInto('refresh_tokens')
    .values({
      token_hash: token.tokenHash,
      session_id: token.sessionId,
      user_id: token.userId,
      created_at: token.createdAt,
      expires_at: token.expiresAt,
      rotated_at: null,
    })
    .execute();
}
