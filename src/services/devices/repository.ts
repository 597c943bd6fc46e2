import { sql } from 'kysely';
import type { Insertable, Kysely, Selectable, SelectQueryBuilder, Updateable } from 'kysely';
import type { DeviceSharesTable, DevicesTable, DevicesTables } from './tables.ts';

export type DeviceRow = Selectable<DevicesTable>;
export type ShareRow = Selectable<DeviceSharesTable>;
export type ShareFlags = Pick<ShareRow, 'position' | 'events' | 'geofences' | 'notifications' | 'commands'>;

/** A device with the claim token it was claimed with, if any (shown to its owner). */
export type DeviceWithToken = DeviceRow & { claim_token: string | null };
/** A device as a user it was shared with sees it. */
export type SharedDeviceRow = DeviceWithToken & ShareFlags & { shared_by: number };

/** One row of a user's grants: the flags are null for owned devices. */
export interface GrantRow {
  device_id: number;
  owner_id: number;
  position: number | null;
  events: number | null;
  geofences: number | null;
  notifications: number | null;
  commands: number | null;
  shared_by: number | null;
}

export interface DeviceFilters {
  ids?: readonly number[];
  uniqueIds?: readonly string[];
}

/** Devices and their shares. */
export class DeviceRepository {
  private readonly db: Kysely<DevicesTables>;
  constructor(db: Kysely<DevicesTables>) {
    this.db = db;
  }

  private withToken() {
    return this.db
      .selectFrom('devices')
      .leftJoin('claim_tokens', (join) => join.onRef('claim_tokens.device_id', '=', 'devices.id').on('claim_tokens.status', '=', 'claimed'))
      .selectAll('devices')
      .select('claim_tokens.token as claim_token');
  }

  findById(id: number): Promise<DeviceWithToken | undefined> {
    return this.withToken().where('devices.id', '=', id).executeTakeFirst();
  }

  findByUniqueId(uniqueId: string): Promise<DeviceRow | undefined> {
    return this.db.selectFrom('devices').selectAll().where('unique_id', '=', uniqueId).executeTakeFirst();
  }

  async exists(id: number): Promise<boolean> {
    return (await this.db.selectFrom('devices').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
  }

  findByIds(ids: readonly number[]): Promise<DeviceWithToken[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.withToken().where('devices.id', 'in', [...ids]).orderBy('devices.id').execute();
  }

  /** Uses devices(owner_id). */
  listOwned(ownerId: number, filters: DeviceFilters): Promise<DeviceWithToken[]> {
    return filtered(this.withToken().where('devices.owner_id', '=', ownerId), filters).orderBy('devices.id').execute();
  }

  /** Uses device_shares(user_id). */
  listShared(userId: number, filters: DeviceFilters): Promise<SharedDeviceRow[]> {
    const query = this.withToken()
      .innerJoin('device_shares', 'device_shares.device_id', 'devices.id')
      .select([
        'device_shares.position',
        'device_shares.events',
        'device_shares.geofences',
        'device_shares.notifications',
        'device_shares.commands',
        'device_shares.shared_by',
      ])
      .where('device_shares.user_id', '=', userId);
    return filtered(query, filters).orderBy('devices.id').execute();
  }

  /** Every device the user owns or was shared, in one round trip over the two indexes. */
  grantsOf(userId: number): Promise<GrantRow[]> {
    const none = sql<number | null>`null`;
    const owned = this.db
      .selectFrom('devices')
      .select([
        'id as device_id',
        'owner_id',
        none.as('position'),
        none.as('events'),
        none.as('geofences'),
        none.as('notifications'),
        none.as('commands'),
        sql<number | null>`null`.as('shared_by'),
      ])
      .where('owner_id', '=', userId);
    const shared = this.db
      .selectFrom('device_shares')
      .innerJoin('devices', 'devices.id', 'device_shares.device_id')
      .select([
        'device_shares.device_id',
        'devices.owner_id',
        'device_shares.position',
        'device_shares.events',
        'device_shares.geofences',
        'device_shares.notifications',
        'device_shares.commands',
        'device_shares.shared_by',
      ])
      .where('device_shares.user_id', '=', userId);
    return owned.unionAll(shared).execute() as Promise<GrantRow[]>;
  }

  insert(device: Insertable<DevicesTable>): Promise<DeviceRow> {
    return this.db.insertInto('devices').values(device).returningAll().executeTakeFirstOrThrow();
  }

  update(id: number, changes: Updateable<DevicesTable>): Promise<DeviceRow | undefined> {
    return this.db.updateTable('devices').set(changes).where('id', '=', id).returningAll().executeTakeFirst();
  }

  async delete(id: number): Promise<boolean> {
    const result = await this.db.deleteFrom('devices').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async idsOwnedBy(ownerId: number): Promise<number[]> {
    const rows = await this.db.selectFrom('devices').select('id').where('owner_id', '=', ownerId).orderBy('id').execute();
    return rows.map((row) => row.id);
  }

  findShare(deviceId: number, userId: number): Promise<ShareRow | undefined> {
    return this.db.selectFrom('device_shares').selectAll().where('device_id', '=', deviceId).where('user_id', '=', userId).executeTakeFirst();
  }

  listShares(deviceId: number): Promise<ShareRow[]> {
    return this.db.selectFrom('device_shares').selectAll().where('device_id', '=', deviceId).orderBy('user_id').execute();
  }

  insertShare(share: Insertable<DeviceSharesTable>): Promise<ShareRow> {
    return this.db.insertInto('device_shares').values(share).returningAll().executeTakeFirstOrThrow();
  }

  updateShare(deviceId: number, userId: number, changes: Updateable<DeviceSharesTable>): Promise<ShareRow | undefined> {
    return this.db
      .updateTable('device_shares')
      .set(changes)
      .where('device_id', '=', deviceId)
      .where('user_id', '=', userId)
      .returningAll()
      .executeTakeFirst();
  }

  async deleteShare(deviceId: number, userId: number): Promise<boolean> {
    const result = await this.db.deleteFrom('device_shares').where('device_id', '=', deviceId).where('user_id', '=', userId).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async deleteSharesOfDevice(deviceId: number): Promise<void> {
    await this.db.deleteFrom('device_shares').where('device_id', '=', deviceId).execute();
  }

  async deleteSharesWithUser(userId: number): Promise<void> {
    await this.db.deleteFrom('device_shares').where('user_id', '=', userId).execute();
  }
}

/** Narrows a list to the ids and uniqueIds asked for; an empty filter list matches nothing, never everything. */
function filtered<Q extends SelectQueryBuilder<DevicesTables, 'devices', object>>(query: Q, filters: DeviceFilters): Q {
  let result = query;
  if (filters.ids) result = result.where('devices.id', 'in', filters.ids.length > 0 ? [...filters.ids] : [-1]) as Q;
  if (filters.uniqueIds) result = result.where('devices.unique_id', 'in', filters.uniqueIds.length > 0 ? [...filters.uniqueIds] : ['']) as Q;
  return result;
}
