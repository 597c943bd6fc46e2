import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import type { AuthTables, UsersTable } from '../tables.ts';

export type UserRow = Selectable<UsersTable>;

export class UserRepository {
  private readonly db: Kysely<AuthTables>;
  constructor(db: Kysely<AuthTables>) {
    this.db = db;
  }

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

  async delete(id: number): Promise<boolean> {
    const result = await this.db.deleteFrom('users').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}
