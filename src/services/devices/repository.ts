import { sql } from 'kysely';
import type { Insertable, Selectable, Updateable } from 'kysely';
import { lockKey } from '../../platform/db/locks.ts';
import { TableAccess } from '../../platform/db/table-access.ts';
import type { FactRecorder } from '../../platform/outbox/outbox.ts';
import type { DeviceInvitationsTable, DeviceSharesTable, DevicesTable, DevicesTables } from './tables.ts';

export type DeviceRow = Selectable<DevicesTable>;
export type ShareRow = Selectable<DeviceSharesTable>;
export type InvitationRow = Selectable<DeviceInvitationsTable>;
export type ShareFlags = Pick<ShareRow, 'position' | 'events' | 'geofences' | 'notifications' | 'commands'>;

/** A device with the claim token it was claimed with, if any (shown to its owner). */
export type DeviceWithToken = DeviceRow & { claim_token: string | null };
/** A device a user owns (share columns null) or was shared (the share's flags and who shared it). */
export type VisibleDeviceRow = DeviceWithToken & { [Flag in keyof ShareFlags]: ShareFlags[Flag] | null } & { shared_by: number | null };

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

/** The tracking fields of one device to write: a field left undefined keeps its value. */
export interface StatusChangeRow {
  id: number;
  status?: string;
  last_update?: number | null;
  position_id?: number | null;
}

/** A share's permission flags and who made it, as device lists and grants read them. */
const SHARE_COLUMNS = [
  'device_shares.position',
  'device_shares.events',
  'device_shares.geofences',
  'device_shares.notifications',
  'device_shares.commands',
  'device_shares.shared_by',
] as const;

/** Values per IN list, well under both engines' bound-parameter limits. */
const UNIQUE_ID_CHUNK = 500;
// SQLite: 7 bound parameters per row, so 2 048 rows stay below its 32 766.
/** The UPDATE after the `changes (id, set_status, status, set_last_update, last_update, set_position_id, position_id)` CTE. */
const STATUS_UPDATE = sql`
  update devices set
    status = case when changes.set_status = 1 then changes.status else devices.status end,
    last_update = case when changes.set_last_update = 1 then changes.last_update else devices.last_update end,
    position_id = case when changes.set_position_id = 1 then changes.position_id else devices.position_id end
  from changes
  where devices.id = changes.id
  returning devices.id`;

/** Devices and their shares. */
export class DeviceRepository extends TableAccess<DevicesTables> {
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

  /** Which of these uniqueIds a device has. */
  async existingUniqueIds(uniqueIds: readonly string[]): Promise<string[]> {
    const found: string[] = [];
    for (let start = 0; start < uniqueIds.length; start += UNIQUE_ID_CHUNK) {
      const rows = await this.db.selectFrom('devices').select('unique_id').where('unique_id', 'in', uniqueIds.slice(start, start + UNIQUE_ID_CHUNK)).execute();
      found.push(...rows.map((row) => row.unique_id));
    }
    return found;
  }

  async exists(id: number): Promise<boolean> {
    return (await this.db.selectFrom('devices').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
  }

  findByIds(ids: readonly number[]): Promise<DeviceWithToken[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.withToken().where('devices.id', 'in', [...ids]).orderBy('devices.id').execute();
  }

  /**
   * Every device the user owns or was shared, in one round trip over devices(owner_id) and
   * device_shares(user_id), unordered.
   */
  listVisible(userId: number): Promise<VisibleDeviceRow[]> {
    const none = sql<number | null>`null`;
    const owned = this.withToken()
      .select([none.as('position'), none.as('events'), none.as('geofences'), none.as('notifications'), none.as('commands'), none.as('shared_by')])
      .where('devices.owner_id', '=', userId);
    const shared = this.withToken()
      .innerJoin('device_shares', 'device_shares.device_id', 'devices.id')
      .select(SHARE_COLUMNS)
      .where('device_shares.user_id', '=', userId);
    return owned.unionAll(shared).execute();
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
        ...SHARE_COLUMNS,
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

  /**
   * Writes the tracking fields of many devices; each row says which fields it sets. At most one
   * row per device. Answers the ids of the devices that exist. Ingestion calls this for every batch
   * it stores, so it must cost no more than that batch's insert: on PostgreSQL one UPDATE ... FROM
   * UNNEST of one array per column (a constant, short statement however many rows), committed
   * without waiting for the WAL flush (visible at once; derived from the positions, which are
   * flushed, and rewritten by the device's next message should a database crash lose it); on SQLite an
   * UPDATE ... FROM json_each of one JSON parameter, one statement text that is prepared once.
   */
  async updateStatuses(rows: readonly StatusChangeRow[]): Promise<number[]> {
    if (rows.length === 0) return [];
    const updated = this.engine === 'postgres' ? await this.updateStatusesUnnest(rows) : await this.updateStatusesJson(rows);
    return updated.sort((a, b) => a - b);
  }

  private async updateStatusesUnnest(rows: readonly StatusChangeRow[]): Promise<number[]> {
    // Inside the caller's transaction (DeviceService.updateStatuses): only this commit is affected.
    await sql`set local synchronous_commit to off`.execute(this.db);
    const flag = (set: (row: StatusChangeRow) => boolean) => rows.map((row) => (set(row) ? 1 : 0));
    const result = await sql<{ id: number }>`
      with changes as (
        select * from unnest(
          ${rows.map((row) => row.id)}::bigint[],
          ${flag((row) => row.status !== undefined)}::integer[], ${rows.map((row) => row.status ?? null)}::varchar[],
          ${flag((row) => row.last_update !== undefined)}::integer[], ${rows.map((row) => row.last_update ?? null)}::bigint[],
          ${flag((row) => row.position_id !== undefined)}::integer[], ${rows.map((row) => row.position_id ?? null)}::bigint[])
        as changes (id, set_status, status, set_last_update, last_update, set_position_id, position_id))
      ${STATUS_UPDATE}`.execute(this.db);
    return result.rows.map((row) => Number(row.id));
  }

  private async updateStatusesJson(rows: readonly StatusChangeRow[]): Promise<number[]> {
    // One JSON text whatever the row count: building a VALUES list cost more per row than the update itself.
    const changes = JSON.stringify(
      rows.map((row) => [
        row.id,
        row.status === undefined ? 0 : 1,
        row.status ?? null,
        row.last_update === undefined ? 0 : 1,
        row.last_update ?? null,
        row.position_id === undefined ? 0 : 1,
        row.position_id ?? null,
      ]),
    );
    const result = await sql<{ id: number }>`
      with changes (id, set_status, status, set_last_update, last_update, set_position_id, position_id) as (
        select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6 from json_each(${changes}))
      ${STATUS_UPDATE}`.execute(this.db);
    return result.rows.map((row) => Number(row.id));
  }

  /** Deletes the device and records the fact for the modules holding its data; call it inside a transaction. */
  async delete(id: number, facts: FactRecorder): Promise<boolean> {
    const result = await this.db.deleteFrom('devices').where('id', '=', id).executeTakeFirst();
    if (result.numDeletedRows === 0n) return false;
    await facts.record(this.db, 'devices.device.deleted', { deviceId: id });
    return true;
  }

  /**
   * Inside a transaction: holds the owner's devices and shares still until it ends, so that what is counted
   * against their caps is what the insert adds to (locks.ts).
   */
  lockOwner(ownerId: number): Promise<void> {
    return lockKey(this.db, 'devices.owner', ownerId);
  }

  async countOwnedBy(ownerId: number): Promise<number> {
    const row = await this.db.selectFrom('devices').select((eb) => eb.fn.countAll<number>().as('count')).where('owner_id', '=', ownerId).executeTakeFirstOrThrow();
    return Number(row.count);
  }

  async idsOwnedBy(ownerId: number): Promise<number[]> {
    const rows = await this.db.selectFrom('devices').select('id').where('owner_id', '=', ownerId).orderBy('id').execute();
    return rows.map((row) => row.id);
  }

  findShare(deviceId: number, userId: number): Promise<ShareRow | undefined> {
    return this.db.selectFrom('device_shares').selectAll().where('device_id', '=', deviceId).where('user_id', '=', userId).executeTakeFirst();
  }

  /** Shares of the device, pending ones (invitations) included. */
  async countSharesOf(deviceId: number): Promise<number> {
    const count = (table: 'device_shares' | 'device_invitations') =>
      this.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('count')).where('device_id', '=', deviceId).executeTakeFirstOrThrow();
    const [shares, invitations] = await Promise.all([count('device_shares'), count('device_invitations')]);
    return Number(shares.count) + Number(invitations.count);
  }

  /** Shares (pending ones included) of every device the owner owns: what a plan's `shares` limit counts. */
  async countSharesGrantedBy(ownerId: number): Promise<number> {
    const count = (table: 'device_shares' | 'device_invitations') =>
      this.db
        .selectFrom(table)
        .innerJoin('devices', 'devices.id', `${table}.device_id`)
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('devices.owner_id', '=', ownerId)
        .executeTakeFirstOrThrow();
    const [shares, invitations] = await Promise.all([count('device_shares'), count('device_invitations')]);
    return Number(shares.count) + Number(invitations.count);
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

  /** Ends every share of the device, pending ones included. */
  async deleteSharesOfDevice(deviceId: number): Promise<void> {
    await this.db.deleteFrom('device_shares').where('device_id', '=', deviceId).execute();
    await this.db.deleteFrom('device_invitations').where('device_id', '=', deviceId).execute();
  }

  findInvitation(deviceId: number, email: string): Promise<InvitationRow | undefined> {
    return this.db.selectFrom('device_invitations').selectAll().where('device_id', '=', deviceId).where('email', '=', email).executeTakeFirst();
  }

  listInvitations(deviceId: number): Promise<InvitationRow[]> {
    return this.db.selectFrom('device_invitations').selectAll().where('device_id', '=', deviceId).orderBy('email').execute();
  }

  /** Pending shares to this (lower-case) address, over device_invitations(email). */
  invitationsTo(email: string): Promise<InvitationRow[]> {
    return this.db.selectFrom('device_invitations').selectAll().where('email', '=', email).orderBy('device_id').execute();
  }

  insertInvitation(invitation: Insertable<DeviceInvitationsTable>): Promise<InvitationRow> {
    return this.db.insertInto('device_invitations').values(invitation).returningAll().executeTakeFirstOrThrow();
  }

  async deleteInvitation(deviceId: number, email: string): Promise<boolean> {
    const result = await this.db.deleteFrom('device_invitations').where('device_id', '=', deviceId).where('email', '=', email).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async deleteSharesWithUser(userId: number): Promise<void> {
    await this.db.deleteFrom('device_shares').where('user_id', '=', userId).execute();
  }
}
