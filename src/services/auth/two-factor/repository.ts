import type { Kysely, Selectable } from 'kysely';
import { lockKey } from '../../../platform/db/locks.ts';
import { TableAccess } from '../../../platform/db/table-access.ts';
import type { AuthTables, TwoFactorTable } from '../tables.ts';
import { isUniqueViolation } from '../users/repository.ts';

export type TwoFactorRow = Selectable<TwoFactorTable>;

export class TwoFactorRepository extends TableAccess<AuthTables> {
  find(userId: number): Promise<TwoFactorRow | undefined> {
    return this.db.selectFrom('two_factor').selectAll().where('user_id', '=', userId).executeTakeFirst();
  }

  /** Which of these users have two-factor authentication on. */
  async enabledAmong(userIds: number[]): Promise<Set<number>> {
    if (userIds.length === 0) return new Set();
    const rows = await this.db
      .selectFrom('two_factor')
      .select('user_id')
      .where('user_id', 'in', userIds)
      .where('enabled_at', 'is not', null)
      .execute();
    return new Set(rows.map((row) => Number(row.user_id)));
  }

  /**
   * Holds a new secret for confirmation; a user with 2FA already on is left untouched (false). One statement
   * (an upsert): parallel setups each replace the pending secret, the last one standing.
   */
  async savePending(userId: number, sealedSecret: string, expiresAt: number, now: number): Promise<boolean> {
    const saved = await this.db
      .insertInto('two_factor')
      .values({ user_id: userId, method: 'totp', secret: null, enabled_at: null, last_used_step: 0, pending_secret: sealedSecret, pending_expires_at: expiresAt, updated_at: now })
      .onConflict((conflict) =>
        conflict
          .column('user_id')
          .doUpdateSet({ method: 'totp', pending_secret: sealedSecret, pending_expires_at: expiresAt, updated_at: now })
          .where('two_factor.enabled_at', 'is', null),
      )
      .returning('user_id')
      .executeTakeFirst();
    return saved !== undefined;
  }

  /**
   * Turns the confirmed pending secret on, with its first used step and a new set of backup codes.
   * False when another request enabled it first or the pending secret changed meanwhile.
   */
  async enable(userId: number, pendingSecret: string, step: number, codeHashes: string[], now: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable('two_factor')
        .set({ method: 'totp', secret: pendingSecret, enabled_at: now, last_used_step: step, pending_secret: null, pending_expires_at: null, updated_at: now })
        .where('user_id', '=', userId)
        .where('enabled_at', 'is', null)
        .where('pending_secret', '=', pendingSecret)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
      await replaceCodes(trx, userId, codeHashes, now);
      return true;
    });
  }

  /**
   * Turns e-mail as the second factor on, with a new set of backup codes; a pending TOTP setup is
   * dropped. False when 2FA (either method) is on already, also when a concurrent request won.
   */
  async enableEmail(userId: number, codeHashes: string[], now: number): Promise<boolean> {
    const enabled = { method: 'email', secret: null, enabled_at: now, last_used_step: 0, pending_secret: null, pending_expires_at: null, updated_at: now } as const;
    try {
      return await this.db.transaction().execute(async (trx) => {
        const existing = await trx.selectFrom('two_factor').select('enabled_at').where('user_id', '=', userId).executeTakeFirst();
        if (existing) {
          const result = await trx.updateTable('two_factor').set(enabled).where('user_id', '=', userId).where('enabled_at', 'is', null).executeTakeFirst();
          if (result.numUpdatedRows === 0n) return false;
        } else {
          await trx.insertInto('two_factor').values({ user_id: userId, ...enabled }).execute();
        }
        await replaceCodes(trx, userId, codeHashes, now);
        return true;
      });
    } catch (error) {
      // A concurrent first setup inserted the row first.
      if (isUniqueViolation(error)) return false;
      throw error;
    }
  }

  /** Records `step` as used; false when it (or a later step) was used already: a replay. */
  async claimStep(userId: number, step: number): Promise<boolean> {
    const result = await this.db
      .updateTable('two_factor')
      .set({ last_used_step: step })
      .where('user_id', '=', userId)
      .where('enabled_at', 'is not', null)
      .where('last_used_step', '<', step)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async disable(userId: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('backup_codes').where('user_id', '=', userId).execute();
      await trx.deleteFrom('two_factor').where('user_id', '=', userId).execute();
    });
  }

  async replaceBackupCodes(userId: number, codeHashes: string[], now: number): Promise<void> {
    await this.db.transaction().execute((trx) => replaceCodes(trx, userId, codeHashes, now));
  }

  unusedBackupCodes(userId: number) {
    return this.db.selectFrom('backup_codes').select(['id', 'code_hash']).where('user_id', '=', userId).where('used_at', 'is', null).execute();
  }

  /** Spends a backup code; false when a concurrent request spent it first. */
  async useBackupCode(id: number, now: number): Promise<boolean> {
    const result = await this.db.updateTable('backup_codes').set({ used_at: now }).where('id', '=', id).where('used_at', 'is', null).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }
}

/** Under a lock on the user's codes (locks.ts): two replacements at once leave one set, not both. */
async function replaceCodes(trx: Kysely<AuthTables>, userId: number, codeHashes: string[], now: number): Promise<void> {
  await lockKey(trx, 'auth.backup-codes.user', userId);
  await trx.deleteFrom('backup_codes').where('user_id', '=', userId).execute();
  await trx
    .insertInto('backup_codes')
    .values(codeHashes.map((code_hash) => ({ user_id: userId, code_hash, created_at: now, used_at: null })))
    .execute();
}
