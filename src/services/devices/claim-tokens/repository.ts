import type { Insertable, Selectable, Updateable } from 'kysely';
import { TableAccess } from '../../../platform/db/table-access.ts';
import type { ClaimTokensTable, DevicesTables } from '../tables.ts';

export type ClaimTokenRow = Selectable<ClaimTokensTable>;
export type ClaimTokenStatus = 'unclaimed' | 'claimed' | 'revoked';

export interface ClaimTokenFilters {
  status?: ClaimTokenStatus;
  uniqueId?: string;
  limit: number;
  offset: number;
}

/** Values per IN list, well under both engines' bound-parameter limits. */
const LOOKUP_CHUNK = 500;

export class ClaimTokenRepository extends TableAccess<DevicesTables> {
  find(token: string): Promise<ClaimTokenRow | undefined> {
    return this.db.selectFrom('claim_tokens').selectAll().where('token', '=', token).executeTakeFirst();
  }

  /** The token that is not revoked and names this device, if any (at most one: a partial unique index). */
  findLiveByUniqueId(uniqueId: string): Promise<ClaimTokenRow | undefined> {
    return this.db
      .selectFrom('claim_tokens')
      .selectAll()
      .where('unique_id', '=', uniqueId)
      .where('status', '<>', 'revoked')
      .executeTakeFirst();
  }

  /** Uses claim_tokens(status, created_at) when filtered by status, claim_tokens(unique_id) by uniqueId. */
  list(filters: ClaimTokenFilters): Promise<ClaimTokenRow[]> {
    let query = this.db.selectFrom('claim_tokens').selectAll();
    if (filters.status) query = query.where('status', '=', filters.status);
    if (filters.uniqueId !== undefined) query = query.where('unique_id', '=', filters.uniqueId);
    return query.orderBy('created_at').orderBy('token').limit(filters.limit).offset(filters.offset).execute();
  }

  insert(token: Insertable<ClaimTokensTable>): Promise<ClaimTokenRow> {
    return this.db.insertInto('claim_tokens').values(token).returningAll().executeTakeFirstOrThrow();
  }

  insertMany(tokens: Insertable<ClaimTokensTable>[]): Promise<ClaimTokenRow[]> {
    if (tokens.length === 0) return Promise.resolve([]);
    return this.db.insertInto('claim_tokens').values(tokens).returningAll().execute();
  }

  /** Which of these tokens are stored already. */
  async existingTokens(tokens: readonly string[]): Promise<string[]> {
    if (tokens.length === 0) return [];
    const rows = await this.db.selectFrom('claim_tokens').select('token').where('token', 'in', [...tokens]).execute();
    return rows.map((row) => row.token);
  }

  /** Which of these uniqueIds a live (not revoked) token names already. */
  async liveUniqueIds(uniqueIds: readonly string[]): Promise<string[]> {
    const found: string[] = [];
    for (let start = 0; start < uniqueIds.length; start += LOOKUP_CHUNK) {
      const rows = await this.db
        .selectFrom('claim_tokens')
        .select('unique_id')
        .where('unique_id', 'in', uniqueIds.slice(start, start + LOOKUP_CHUNK))
        .where('status', '<>', 'revoked')
        .execute();
      for (const row of rows) if (row.unique_id !== null) found.push(row.unique_id);
    }
    return found;
  }

  /** Changes a token only while it is unclaimed; undefined otherwise. */
  updateUnclaimed(token: string, changes: Updateable<ClaimTokensTable>): Promise<ClaimTokenRow | undefined> {
    return this.db
      .updateTable('claim_tokens')
      .set(changes)
      .where('token', '=', token)
      .where('status', '=', 'unclaimed')
      .returningAll()
      .executeTakeFirst();
  }

  /** Answers the device the token was claimed for, if it was (its owner saw the token until now). */
  async revoke(token: string, now: number): Promise<number | null> {
    const row = await this.db
      .updateTable('claim_tokens')
      .set({ status: 'revoked', updated_at: now })
      .where('token', '=', token)
      .where('status', '<>', 'revoked')
      .returning('device_id')
      .executeTakeFirst();
    return row?.device_id ?? null;
  }

  /**
   * The one write that decides a race: only a token still unclaimed (and still naming the device the
   * caller saw) turns claimed, so of two concurrent claims exactly one updates a row.
   */
  async markClaimed(token: string, uniqueId: string, userId: number, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('claim_tokens')
      .set({ status: 'claimed', claimed_by: userId, claimed_at: now, updated_at: now })
      .where('token', '=', token)
      .where('status', '=', 'unclaimed')
      .where('unique_id', '=', uniqueId)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async attachDevice(token: string, deviceId: number): Promise<void> {
    await this.db.updateTable('claim_tokens').set({ device_id: deviceId }).where('token', '=', token).execute();
  }

  /** A deleted device's token can be claimed again (the tracker is resold or re-registered). */
  releaseOfDevice(deviceId: number, now: number): Promise<void> {
    return this.releaseWhere('device_id', deviceId, now);
  }

  /** Tokens a deleted user claimed become claimable again. */
  releaseClaimedBy(userId: number, now: number): Promise<void> {
    return this.releaseWhere('claimed_by', userId, now);
  }

  private async releaseWhere(column: 'device_id' | 'claimed_by', id: number, now: number): Promise<void> {
    await this.db
      .updateTable('claim_tokens')
      .set({ status: 'unclaimed', claimed_by: null, claimed_at: null, device_id: null, updated_at: now })
      .where(column, '=', id)
      .where('status', '=', 'claimed')
      .execute();
  }
}
