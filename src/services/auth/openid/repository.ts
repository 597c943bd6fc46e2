import type { Insertable, Selectable } from 'kysely';
import { TableAccess } from '../../../platform/db/table-access.ts';
import type { AuthTables, OpenIdIdentitiesTable, OpenIdStatesTable } from '../tables.ts';

export type OpenIdIdentityRow = Selectable<OpenIdIdentitiesTable>;
export type OpenIdStateRow = Selectable<OpenIdStatesTable>;

export class OpenIdRepository extends TableAccess<AuthTables> {
  async insertState(row: Insertable<OpenIdStatesTable>): Promise<void> {
    await this.db.insertInto('openid_states').values(row).execute();
  }

  findState(stateHash: string): Promise<OpenIdStateRow | undefined> {
    return this.db.selectFrom('openid_states').selectAll().where('state_hash', '=', stateHash).executeTakeFirst();
  }

  /** Spends a live state; false when it was used (a concurrent callback won) or has expired. */
  async consumeState(stateHash: string, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('openid_states')
      .set({ consumed_at: now })
      .where('state_hash', '=', stateHash)
      .where('consumed_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async purgeStatesExpiredBefore(before: number): Promise<void> {
    await this.db.deleteFrom('openid_states').where('expires_at', '<', before).execute();
  }

  findIdentity(provider: string, subject: string): Promise<OpenIdIdentityRow | undefined> {
    return this.db.selectFrom('openid_identities').selectAll().where('provider', '=', provider).where('subject', '=', subject).executeTakeFirst();
  }

  /** Links the identity, or leaves the link a parallel sign-in made first: the account it is linked to, either way. */
  async linkIdentity(row: Insertable<OpenIdIdentitiesTable>): Promise<number> {
    await this.db
      .insertInto('openid_identities')
      .values(row)
      .onConflict((conflict) => conflict.columns(['provider', 'subject']).doNothing())
      .execute();
    const linked = await this.findIdentity(row.provider, row.subject);
    if (!linked) throw new Error(`the ${row.provider} identity was unlinked while being linked`);
    return linked.user_id;
  }

  async touchIdentity(id: number, now: number): Promise<void> {
    await this.db.updateTable('openid_identities').set({ last_used_at: now }).where('id', '=', id).execute();
  }

  async deleteIdentity(id: number): Promise<void> {
    await this.db.deleteFrom('openid_identities').where('id', '=', id).execute();
  }
}
