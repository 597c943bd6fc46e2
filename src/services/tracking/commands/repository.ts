import { sql } from 'kysely';
import type { Kysely, Selectable } from 'kysely';
import { lockKey } from '../../../platform/db/locks.ts';
import { TableAccess } from '../../../platform/db/table-access.ts';
import type { CommandsTable, SavedCommandsTable, TrackingTables } from '../tables.ts';
import type { CommandStatus } from './types.ts';

export type CommandRow = Selectable<CommandsTable>;
export type SavedCommandRow = Selectable<SavedCommandsTable>;

export interface NewCommand {
  deviceId: number;
  userId: number;
  type: string;
  attributes: Record<string, unknown>;
  createdAt: number;
}

/** At most `max` commands queued for one device, counting those created at or after `since` (older ones are expiring). */
export interface QueueCap {
  since: number;
  max: number;
}

/** A new command's columns, whatever its first status. */
function storedFields(command: NewCommand) {
  return {
    device_id: command.deviceId,
    user_id: command.userId,
    type: command.type,
    attributes: JSON.stringify(command.attributes),
    created_at: command.createdAt,
  };
}

/** Every query of the commands, the saved commands and the devices' protocols. */
export class CommandRepository extends TableAccess<TrackingTables> {
  /** Inserts a queued command; undefined, inserting nothing, when the device's queue is full. */
  insert(command: NewCommand, cap: QueueCap): Promise<CommandRow | undefined> {
    return this.#withinCap(command.deviceId, cap, (trx) =>
      trx
        .insertInto('commands')
        .values({ ...storedFields(command), status: 'queued' })
        .returningAll()
        .executeTakeFirstOrThrow(),
    );
  }

  /**
   * Inserts a command for a device whose connection this instance holds, in one statement: already claimed (sent at
   * `at`) when none of the device's queued commands created at or after `cap.since` is ahead of it, else queued behind
   * them. Undefined, inserting nothing, when the device's queue is full (the command would have to wait behind it).
   */
  insertClaimed(command: NewCommand, cap: QueueCap, at: number): Promise<CommandRow | undefined> {
    return this.#withinCap(command.deviceId, cap, (trx) => {
      const ahead = trx
        .selectFrom('commands')
        .select('id')
        .where('device_id', '=', command.deviceId)
        .where('status', '=', 'queued')
        .where('created_at', '>=', cap.since);
      return trx
        .insertInto('commands')
        .values({
          ...storedFields(command),
          status: sql<string>`CASE WHEN EXISTS ${ahead} THEN 'queued' ELSE 'sent' END`,
          sent_at: sql<number | null>`CASE WHEN EXISTS ${ahead} THEN NULL ELSE CAST(${at} AS BIGINT) END`,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    });
  }

  /**
   * Runs `insert` unless the device already has `cap.max` queued commands, counted and inserted in one transaction
   * under the device's queue lock (locks.ts), so two sends cannot both take the last place.
   */
  #withinCap(deviceId: number, cap: QueueCap, insert: (trx: Kysely<TrackingTables>) => Promise<CommandRow>): Promise<CommandRow | undefined> {
    return this.db.transaction().execute(async (trx) => {
      await lockKey(trx, 'tracking.commands.queued', deviceId);
      const { queued } = await trx
        .selectFrom('commands')
        .select((eb) => eb.fn.countAll<number>().as('queued'))
        .where('device_id', '=', deviceId)
        .where('status', '=', 'queued')
        .where('created_at', '>=', cap.since)
        .executeTakeFirstOrThrow();
      return Number(queued) >= cap.max ? undefined : insert(trx);
    });
  }

  findById(id: number): Promise<CommandRow | undefined> {
    return this.db.selectFrom('commands').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Claims the device's oldest queued command created at or after `since` (queued → sent) in one statement: of two
   * instances claiming at once, each gets a different command, or none. PostgreSQL skips a row another transaction is
   * claiming (rather than waiting for it and then finding it taken); SQLite has one writer at a time.
   */
  claimOldest(deviceId: number, since: number, at: number): Promise<CommandRow | undefined> {
    const oldest = this.db
      .selectFrom('commands')
      .select('id')
      .where('device_id', '=', deviceId)
      .where('status', '=', 'queued')
      .where('created_at', '>=', since)
      .orderBy('id')
      .limit(1);
    return this.db
      .updateTable('commands')
      .set({ status: 'sent', sent_at: at })
      .where('id', '=', (this.engine === 'postgres' ? oldest.forUpdate().skipLocked() : oldest))
      .where('status', '=', 'queued')
      .returningAll()
      .executeTakeFirst();
  }

  /**
   * Moves one command from `from` to `to` unless another writer moved it first: the claim that makes a queued
   * command go out once, whichever instance tries. Answers the row as it is now, or undefined when it was not in `from`.
   */
  async transition(id: number, from: CommandStatus, to: CommandStatus, at: number): Promise<CommandRow | undefined> {
    // Back to the queue, or failed after its claim: nothing went out, so it has no sentAt.
    const times = to === 'sent' ? { sent_at: at } : to === 'delivered' ? { delivered_at: at } : to === 'queued' || to === 'failed' ? { sent_at: null } : {};
    return this.db
      .updateTable('commands')
      .set({ status: to, ...times })
      .where('id', '=', id)
      .where('status', '=', from)
      .returningAll()
      .executeTakeFirst();
  }

  /** The device's oldest command still awaiting an answer. */
  oldestSent(deviceId: number): Promise<CommandRow | undefined> {
    return this.db
      .selectFrom('commands')
      .selectAll()
      .where('device_id', '=', deviceId)
      .where('status', '=', 'sent')
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
  }

  /** Queued commands created before `cutoff` become expired; answers those this call moved. */
  expire(cutoff: number, deviceId?: number): Promise<CommandRow[]> {
    let query = this.db.updateTable('commands').set({ status: 'expired' }).where('status', '=', 'queued').where('created_at', '<', cutoff);
    if (deviceId !== undefined) query = query.where('device_id', '=', deviceId);
    return query.returningAll().execute();
  }

  /** History of one device in [from, to] by createdAt, ascending. */
  history(deviceId: number, from: number, to: number, limit: number): Promise<CommandRow[]> {
    return this.db
      .selectFrom('commands')
      .selectAll()
      .where('device_id', '=', deviceId)
      .where('created_at', '>=', from)
      .where('created_at', '<=', to)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  }

  async removeDevice(deviceId: number): Promise<void> {
    await this.db.deleteFrom('commands').where('device_id', '=', deviceId).execute();
    await this.db.deleteFrom('device_protocols').where('device_id', '=', deviceId).execute();
  }

  async removeUser(userId: number): Promise<void> {
    await this.db.deleteFrom('saved_commands').where('user_id', '=', userId).execute();
  }

  // --- saved commands ---

  /**
   * Inserts unless `admit`, given the user's saved command count, throws. Under a lock on the user's saved commands
   * (locks.ts): parallel inserts count one after another.
   */
  insertSaved(row: Omit<SavedCommandRow, 'id'>, admit: (usage: number) => void): Promise<SavedCommandRow> {
    return this.db.transaction().execute(async (trx) => {
      await lockKey(trx, 'tracking.saved-commands.user', row.user_id);
      admit(await new CommandRepository(trx).countSaved(row.user_id));
      return trx.insertInto('saved_commands').values(row).returningAll().executeTakeFirstOrThrow();
    });
  }

  findSaved(id: number): Promise<SavedCommandRow | undefined> {
    return this.db.selectFrom('saved_commands').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The user's own saved commands and those administrators created, ascending by id; `all` (administrators): every one. */
  listSaved(userId: number, all: boolean, limit: number): Promise<SavedCommandRow[]> {
    let query = this.db.selectFrom('saved_commands').selectAll();
    if (!all) query = query.where((eb) => eb.or([eb('user_id', '=', userId), eb('by_administrator', '=', 1)]));
    return query.orderBy('id').limit(limit).execute();
  }

  countSaved(userId: number): Promise<number> {
    return this.db
      .selectFrom('saved_commands')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow()
      .then((row) => Number(row.count));
  }

  updateSaved(id: number, changes: Pick<SavedCommandRow, 'description' | 'type' | 'attributes' | 'by_administrator'>): Promise<SavedCommandRow | undefined> {
    return this.db.updateTable('saved_commands').set(changes).where('id', '=', id).returningAll().executeTakeFirst();
  }

  async deleteSaved(id: number): Promise<void> {
    await this.db.deleteFrom('saved_commands').where('id', '=', id).execute();
  }

  // --- protocols ---

  async protocolOf(deviceId: number): Promise<string | undefined> {
    const row = await this.db.selectFrom('device_protocols').select('protocol').where('device_id', '=', deviceId).executeTakeFirst();
    return row?.protocol;
  }

  async setProtocol(deviceId: number, protocol: string, at: number): Promise<void> {
    await this.db
      .insertInto('device_protocols')
      .values({ device_id: deviceId, protocol, updated_at: at })
      .onConflict((oc) => oc.column('device_id').doUpdateSet({ protocol, updated_at: at }))
      .execute();
  }
}
