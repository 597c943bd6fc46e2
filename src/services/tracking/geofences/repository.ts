import type { Insertable, Selectable, Updateable } from 'kysely';
import { lockKey } from '../../../platform/db/locks.ts';
import { TableAccess } from '../../../platform/db/table-access.ts';
import { chunksOf } from '../chunks.ts';
import type { GeofencesTable, TrackingTables } from '../tables.ts';

export type GeofenceRow = Selectable<GeofencesTable>;

const ID_CHUNK = 10_000;

export class GeofenceRepository extends TableAccess<TrackingTables> {
  async insert(values: Insertable<GeofencesTable>): Promise<GeofenceRow> {
    return this.db.insertInto('geofences').values(values).returningAll().executeTakeFirstOrThrow();
  }

  async update(id: number, changes: Updateable<GeofencesTable>): Promise<GeofenceRow | undefined> {
    return this.db.updateTable('geofences').set(changes).where('id', '=', id).returningAll().executeTakeFirst();
  }

  async delete(id: number): Promise<boolean> {
    const result = await this.db.deleteFrom('geofences').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  findById(id: number): Promise<GeofenceRow | undefined> {
    return this.db.selectFrom('geofences').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The geofences of these owners, ascending by id. */
  async listOfOwners(ownerIds: readonly number[]): Promise<GeofenceRow[]> {
    const rows: GeofenceRow[] = [];
    for (const chunk of chunksOf(ownerIds, ID_CHUNK)) {
      rows.push(...(await this.db.selectFrom('geofences').selectAll().where('owner_id', 'in', chunk).execute()));
    }
    return rows.sort((a, b) => a.id - b.id);
  }

  /** Inside a transaction: holds the owner's geofences still until it ends, so that their usage is what the write adds to (locks.ts). */
  lockOwner(ownerId: number): Promise<void> {
    return lockKey(this.db, 'tracking.geofences.owner', ownerId);
  }

  /** How many geofences the owner has, and how many points their areas hold together (over geofences(owner_id)). */
  async usageOf(ownerId: number): Promise<{ geofences: number; points: number }> {
    const row = await this.db
      .selectFrom('geofences')
      .select((eb) => [eb.fn.countAll<number>().as('geofences'), eb.fn.coalesce(eb.fn.sum<number>('points'), eb.val(0)).as('points')])
      .where('owner_id', '=', ownerId)
      .executeTakeFirstOrThrow();
    return { geofences: Number(row.geofences), points: Number(row.points) };
  }

  listAll(): Promise<GeofenceRow[]> {
    return this.db.selectFrom('geofences').selectAll().orderBy('id').execute();
  }

  async deleteOfOwner(ownerId: number): Promise<void> {
    await this.db.deleteFrom('geofences').where('owner_id', '=', ownerId).execute();
  }
}
