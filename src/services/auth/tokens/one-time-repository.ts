import type { Selectable } from 'kysely';
import { lockKey } from '../../../platform/db/locks.ts';
import { TableAccess } from '../../../platform/db/table-access.ts';
import type { AuthTables, OneTimeTokensTable } from '../tables.ts';

export type OneTimeTokenRow = Selectable<OneTimeTokensTable>;

export interface NewOneTimeToken {
  tokenHash: string;
  purpose: string;
  userId: number;
  codeHash: string | null;
  createdAt: number;
  expiresAt: number;
}

export class OneTimeTokenRepository extends TableAccess<AuthTables> {
  /**
   * Inserts `row`, the user's earlier live tokens of its purpose consumed, unless one was issued after `since`
   * (false). The look and the insert hold a lock on the user's tokens (locks.ts): of parallel calls, one inserts.
   */
  async replaceUnlessIssuedAfter(row: NewOneTimeToken, since: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await lockKey(trx, 'auth.one-time-tokens.user', row.userId);
      const tokens = new OneTimeTokenRepository(trx);
      const latest = await tokens.latestCreatedAt(row.purpose, row.userId);
      if (latest !== undefined && latest > since) return false;
      await tokens.consumeAllOfUser(row.purpose, row.userId, row.createdAt);
      await tokens.insert(row);
      return true;
    });
  }

  async insert(row: NewOneTimeToken): Promise<void> {
    await this.db
      .insertInto('one_time_tokens')
      .values({
        token_hash: row.tokenHash,
        purpose: row.purpose,
        user_id: row.userId,
        code_hash: row.codeHash,
        code_sent_at: row.codeHash === null ? null : row.createdAt,
        created_at: row.createdAt,
        expires_at: row.expiresAt,
        consumed_at: null,
      })
      .execute();
  }

  findLive(purpose: string, tokenHash: string, now: number): Promise<OneTimeTokenRow | undefined> {
    return this.live(purpose, now).where('token_hash', '=', tokenHash).executeTakeFirst();
  }

  latestLiveOfUser(purpose: string, userId: number, now: number): Promise<OneTimeTokenRow | undefined> {
    return this.live(purpose, now).where('user_id', '=', userId).orderBy('created_at', 'desc').limit(1).executeTakeFirst();
  }

  /** The tokens of a purpose still usable at `now`: neither consumed nor expired. */
  private live(purpose: string, now: number) {
    return this.db
      .selectFrom('one_time_tokens')
      .selectAll()
      .where('purpose', '=', purpose)
      .where('consumed_at', 'is', null)
      .where('expires_at', '>', now);
  }

  latestCreatedAt(purpose: string, userId: number): Promise<number | undefined> {
    return this.db
      .selectFrom('one_time_tokens')
      .select((eb) => eb.fn.max('created_at').as('latest'))
      .where('user_id', '=', userId)
      .where('purpose', '=', purpose)
      .executeTakeFirst()
      .then((row) => (row?.latest === null || row?.latest === undefined ? undefined : Number(row.latest)));
  }

  /** Consumes a live token; false when it was already used, replaced, burned or expired (a concurrent use lost). */
  async consume(tokenHash: string, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('one_time_tokens')
      .set({ consumed_at: now })
      .where('token_hash', '=', tokenHash)
      .where('consumed_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * Counts an attempt before the code is checked, so concurrent guesses cannot exceed `maxAttempts`.
   * Returns the attempts made including this one, or undefined when no attempt is left.
   */
  async reserveAttempt(tokenHash: string, maxAttempts: number, now: number): Promise<number | undefined> {
    const row = await this.db
      .updateTable('one_time_tokens')
      .set((eb) => ({ failed_attempts: eb('failed_attempts', '+', 1) }))
      .where('token_hash', '=', tokenHash)
      .where('consumed_at', 'is', null)
      .where('expires_at', '>', now)
      .where('failed_attempts', '<', maxAttempts)
      .returning('failed_attempts')
      .executeTakeFirst();
    return row?.failed_attempts;
  }

  /** Puts a new code on a live token whose code was sent at or before `sentBefore`; false otherwise. */
  async replaceCode(tokenHash: string, codeHash: string, now: number, sentBefore: number): Promise<boolean> {
    const result = await this.db
      .updateTable('one_time_tokens')
      .set({ code_hash: codeHash, code_sent_at: now })
      .where('token_hash', '=', tokenHash)
      .where('consumed_at', 'is', null)
      .where('expires_at', '>', now)
      .where('code_sent_at', '<=', sentBefore)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async burn(tokenHash: string, now: number): Promise<void> {
    await this.db.updateTable('one_time_tokens').set({ consumed_at: now }).where('token_hash', '=', tokenHash).where('consumed_at', 'is', null).execute();
  }

  async consumeAllOfUser(purpose: string, userId: number, now: number): Promise<void> {
    await this.db
      .updateTable('one_time_tokens')
      .set({ consumed_at: now })
      .where('user_id', '=', userId)
      .where('purpose', '=', purpose)
      .where('consumed_at', 'is', null)
      .execute();
  }

  async purgeExpiredBefore(before: number): Promise<void> {
    await this.db.deleteFrom('one_time_tokens').where('expires_at', '<', before).execute();
  }
}
