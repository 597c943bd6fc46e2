import type { FactRecorder } from '../../../platform/outbox/outbox.ts';
import { sql } from 'kysely';
import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import { TableAccess } from '../../../platform/db/table-access.ts';
import type { AuthTables, UsersTable } from '../tables.ts';

export type UserRow = Selectable<UsersTable>;

export interface UserListQuery {
  /** Part of the e-mail address, case-insensitive. */
  search?: string;
  offset: number;
  limit: number;
}

export class UserRepository extends TableAccess<AuthTables> {
  findById(id: number): Promise<UserRow | undefined> {
    return this.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  }

  findByEmail(email: string): Promise<UserRow | undefined> {
    return this.db.selectFrom('users').selectAll().where('email', '=', email.toLowerCase()).executeTakeFirst();
  }

  async insert(user: Insertable<UsersTable>): Promise<UserRow> {
    return this.db
      .insertInto('users')
      .values({ ...user, email: user.email.toLowerCase() })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  async update(id: number, changes: Updateable<UsersTable>): Promise<UserRow | undefined> {
    return this.db.updateTable('users').set(changes).where('id', '=', id).returningAll().executeTakeFirst();
  }

  /** Administrators who can sign in at `now` (enabled, not expired), other than `exceptId`. */
  async countActiveAdministrators(now: number, exceptId: number): Promise<number> {
    const row = await this.db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('total'))
      .where('administrator', '=', 1)
      .where('disabled', '=', 0)
      .where((eb) => eb.or([eb('expiration_time', 'is', null), eb('expiration_time', '>', now)]))
      .where('id', '!=', exceptId)
      .executeTakeFirstOrThrow();
    return Number(row.total);
  }

  async list(query: UserListQuery): Promise<{ rows: UserRow[]; total: number }> {
    let filtered = this.db.selectFrom('users');
    if (query.search) {
      // E-mails are stored lower-cased; LIKE wildcards in the search are matched literally.
      const pattern = `%${query.search.toLowerCase().replace(/[\\%_]/g, (char) => `\\${char}`)}%`;
      filtered = filtered.where(sql<boolean>`email like ${pattern} escape '\\'`);
    }
    const [rows, count] = await Promise.all([
      filtered.selectAll().orderBy('id').offset(query.offset).limit(query.limit).execute(),
      filtered.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
    ]);
    return { rows, total: Number(count.total) };
  }

  /**
   * Removes the account and its credentials and records the fact for the modules that hold the user's data, in one
   * transaction. Password-reset tokens stay until they expire, so a reset link of a deleted account answers "user not
   * found" rather than "invalid".
   */
  async deleteWithCredentials(id: number, facts: FactRecorder): Promise<boolean> {
    return this.db.transaction().execute((trx) => deleteAccount(trx, id, facts));
  }

  /**
   * Deletes the account as deleteWithCredentials does and inserts `replacement` (its address, typically) in the same
   * transaction, so the address is never free in between. Undefined when the account was gone already (another
   * instance replaced it first): nothing changed.
   */
  async replace(id: number, replacement: Insertable<UsersTable>, facts: FactRecorder): Promise<UserRow | undefined> {
    return this.db.transaction().execute(async (trx) => {
      if (!(await deleteAccount(trx, id, facts))) return undefined;
      return trx
        .insertInto('users')
        .values({ ...replacement, email: replacement.email.toLowerCase() })
        .returningAll()
        .executeTakeFirstOrThrow();
    });
  }
}

async function deleteAccount(trx: Kysely<AuthTables>, id: number, facts: FactRecorder): Promise<boolean> {
  await trx.deleteFrom('backup_codes').where('user_id', '=', id).execute();
  await trx.deleteFrom('two_factor').where('user_id', '=', id).execute();
  await trx.deleteFrom('refresh_tokens').where('user_id', '=', id).execute();
  await trx.deleteFrom('openid_identities').where('user_id', '=', id).execute();
  await trx.deleteFrom('one_time_tokens').where('user_id', '=', id).where('purpose', '!=', 'password_reset').execute();
  const result = await trx.deleteFrom('users').where('id', '=', id).executeTakeFirst();
  if (result.numDeletedRows === 0n) return false;
  await facts.record(trx, 'auth.user.deleted', { userId: id });
  return true;
}

/** True for the unique-constraint violation of either engine (a concurrent insert won the race). */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
