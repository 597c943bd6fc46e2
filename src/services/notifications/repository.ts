import type { Insertable, Kysely, Selectable } from 'kysely';
import type { Database } from '../../platform/db/database.ts';
import { lockKey } from '../../platform/db/locks.ts';
import { TableAccess } from '../../platform/db/table-access.ts';
import type { NotificationsTables } from './tables.ts';

export type RuleRow = Selectable<NotificationsTables['notification_rules']>;
export type TargetRow = Selectable<NotificationsTables['notification_targets']>;
export type DeliveryRow = Selectable<NotificationsTables['notification_deliveries']>;
export type NewDeliveryRow = Insertable<NotificationsTables['notification_deliveries']>;

export interface RuleWithDevices extends RuleRow {
  deviceIds: number[];
}

export interface RuleFields {
  type: string;
  always: boolean;
  deviceIds: readonly number[];
  channels: readonly string[];
  attributes: Record<string, unknown>;
  calendarId: number | null;
}

const ID_CHUNK = 1000;

/** Rules, push targets and deliveries: the only code that touches the module's tables. */
export class NotificationsRepository extends TableAccess<NotificationsTables> {
  constructor(database: Database) {
    super(database.db as Kysely<NotificationsTables>);
  }

  // Rules

  countRules(userId: number): Promise<number> {
    return countOf(this.db, 'notification_rules', userId);
  }

  /**
   * Inserts a rule unless `admit`, given the user's rule count under a lock on their rules (locks.ts), throws:
   * parallel inserts count one after another.
   */
  async insertRule(userId: number, fields: RuleFields, webhookSecret: string | null, now: number, admit: (usage: number) => void): Promise<RuleWithDevices> {
    return this.db.transaction().execute(async (trx) => {
      await lockKey(trx, 'notifications.rules.user', userId);
      admit(await countOf(trx, 'notification_rules', userId));
      const row = await trx
        .insertInto('notification_rules')
        .values({ user_id: userId, ...ruleColumns(fields), webhook_secret: webhookSecret, created_at: now, updated_at: now })
        .returningAll()
        .executeTakeFirstOrThrow();
      await replaceDevices(trx, Number(row.id), fields);
      return { ...row, deviceIds: fields.always ? [] : [...fields.deviceIds].sort((a, b) => a - b) };
    });
  }

  async updateRule(userId: number, id: number, fields: RuleFields, webhookSecret: string | null, now: number): Promise<RuleWithDevices | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('notification_rules')
        .set({ ...ruleColumns(fields), webhook_secret: webhookSecret, updated_at: now })
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .returningAll()
        .executeTakeFirst();
      if (!row) return undefined;
      await trx.deleteFrom('notification_rule_devices').where('rule_id', '=', id).execute();
      await replaceDevices(trx, id, fields);
      return { ...row, deviceIds: fields.always ? [] : [...fields.deviceIds].sort((a, b) => a - b) };
    });
  }

  async deleteRule(userId: number, id: number): Promise<boolean> {
    const result = await this.db.deleteFrom('notification_rules').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async findRule(userId: number, id: number): Promise<RuleWithDevices | undefined> {
    const row = await this.db.selectFrom('notification_rules').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    return row && (await this.withDevices([row]))[0];
  }

  async rulesById(ids: readonly number[]): Promise<Map<number, RuleRow>> {
    const found = new Map<number, RuleRow>();
    for (let at = 0; at < ids.length; at += ID_CHUNK) {
      const chunk = ids.slice(at, at + ID_CHUNK);
      for (const row of await this.db.selectFrom('notification_rules').selectAll().where('id', 'in', chunk).execute()) found.set(Number(row.id), row);
    }
    return found;
  }

  async listRules(userId: number): Promise<RuleWithDevices[]> {
    const rows = await this.db.selectFrom('notification_rules').selectAll().where('user_id', '=', userId).orderBy('id').execute();
    return this.withDevices(rows);
  }

  /** Every rule of `type`: those for every device, and those naming devices, by device. */
  async rulesOfType(type: string): Promise<{ always: RuleRow[]; named: Map<number, RuleRow[]> }> {
    const always = await this.db.selectFrom('notification_rules').selectAll().where('type', '=', type).where('always', '=', 1).orderBy('id').execute();
    const rows = await this.db
      .selectFrom('notification_rule_devices')
      .innerJoin('notification_rules', 'notification_rules.id', 'notification_rule_devices.rule_id')
      .selectAll('notification_rules')
      .select('notification_rule_devices.device_id as named_device')
      .where('notification_rules.type', '=', type)
      .orderBy('notification_rules.id')
      .execute();
    const named = new Map<number, RuleRow[]>();
    for (const { named_device, ...rule } of rows) {
      const list = named.get(Number(named_device)) ?? [];
      list.push(rule);
      named.set(Number(named_device), list);
    }
    return { always, named };
  }

  async removeDevice(deviceId: number): Promise<void> {
    await this.db.deleteFrom('notification_rule_devices').where('device_id', '=', deviceId).execute();
  }

  async removeUser(userId: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('notification_deliveries').where('user_id', '=', userId).execute();
      await trx.deleteFrom('notification_rules').where('user_id', '=', userId).execute();
      await trx.deleteFrom('notification_targets').where('user_id', '=', userId).execute();
    });
  }

  private async withDevices(rows: RuleRow[]): Promise<RuleWithDevices[]> {
    const ids = rows.filter((row) => row.always === 0).map((row) => Number(row.id));
    const devices = new Map<number, number[]>();
    for (let at = 0; at < ids.length; at += ID_CHUNK) {
      const links = await this.db
        .selectFrom('notification_rule_devices')
        .select(['rule_id', 'device_id'])
        .where('rule_id', 'in', ids.slice(at, at + ID_CHUNK))
        .orderBy('device_id')
        .execute();
      for (const link of links) {
        const list = devices.get(Number(link.rule_id)) ?? [];
        list.push(Number(link.device_id));
        devices.set(Number(link.rule_id), list);
      }
    }
    return rows.map((row) => ({ ...row, deviceIds: devices.get(Number(row.id)) ?? [] }));
  }

  // Push targets

  /**
   * The user's target with this kind and address, else a new one unless `admit`, given the user's target count,
   * throws; either way other users' targets with the address are deleted (it is the user's now), and a refusal
   * deletes nothing. Under a lock on the user's targets (locks.ts): parallel registrations count one after
   * another, and the same token registered twice at once makes one target.
   */
  async registerTarget(values: Insertable<NotificationsTables['notification_targets']>, admit: (usage: number) => void): Promise<{ row: TargetRow; created: boolean }> {
    return this.db.transaction().execute(async (trx) => {
      await lockKey(trx, 'notifications.targets.user', values.user_id);
      const existing = await trx
        .selectFrom('notification_targets')
        .selectAll()
        .where('user_id', '=', values.user_id)
        .where('kind', '=', values.kind)
        .where('address', '=', values.address)
        .executeTakeFirst();
      if (!existing) admit(await countOf(trx, 'notification_targets', values.user_id));
      await trx.deleteFrom('notification_targets').where('kind', '=', values.kind).where('address', '=', values.address).where('user_id', '!=', values.user_id).execute();
      if (existing) return { row: existing, created: false };
      return { row: await trx.insertInto('notification_targets').values(values).returningAll().executeTakeFirstOrThrow(), created: true };
    });
  }

  listTargets(userId: number, kinds?: readonly string[]): Promise<TargetRow[]> {
    let query = this.db.selectFrom('notification_targets').selectAll().where('user_id', '=', userId);
    if (kinds) {
      if (kinds.length === 0) return Promise.resolve([]);
      query = query.where('kind', 'in', kinds);
    }
    return query.orderBy('id').execute();
  }

  findTarget(id: number): Promise<TargetRow | undefined> {
    return this.db.selectFrom('notification_targets').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async deleteTarget(userId: number, id: number): Promise<boolean> {
    const result = await this.db.deleteFrom('notification_targets').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  // Deliveries

  /**
   * Inserts the deliveries of one fact; an (event, rule, channel, target) queued already is left as
   * it is (a fact handled twice queues nothing twice). A mail or push delivery whose collapse key
   * has a message waiting for its window is recorded as collapsed into it; one whose key was sent
   * within `windowMs` waits for the end of that window, so the repeats fold into it.
   */
  async queue(rows: readonly NewDeliveryRow[], now: number, windowMs: number): Promise<number> {
    if (rows.length === 0) return 0;
    return this.db.transaction().execute(async (trx) => {
      let queued = 0;
      for (const row of rows) {
        let values: NewDeliveryRow = row;
        if (row.collapse_key) {
          let waiting = trx
            .selectFrom('notification_deliveries')
            .select(['id'])
            .where('collapse_key', '=', row.collapse_key)
            .where('state', '=', 'pending')
            .where('claimed_at', 'is', null)
            .where('available_at', '>', now)
            .where('collapsed_into', 'is', null);
          // Locked, so a worker claiming it meanwhile either waits for this or is seen to have taken it.
          if (this.engine === 'postgres') waiting = waiting.forUpdate();
          const carrier = await waiting.executeTakeFirst();
          if (carrier) {
            values = { ...row, state: 'collapsed', collapsed_into: Number(carrier.id), available_at: now };
          } else {
            const last = await trx
              .selectFrom('notification_deliveries')
              .select('created_at')
              .where('collapse_key', '=', row.collapse_key)
              .where('created_at', '>', now - windowMs)
              .where('state', 'in', ['pending', 'sent'])
              .orderBy('created_at', 'desc')
              .executeTakeFirst();
            if (last) values = { ...row, available_at: Number(last.created_at) + windowMs };
          }
        }
        const inserted = await trx
          .insertInto('notification_deliveries')
          .values(values)
          .onConflict((oc) => oc.columns(['event_id', 'rule_id', 'channel', 'target']).doNothing())
          .returning('id')
          .executeTakeFirst();
        if (inserted) queued += 1;
      }
      return queued;
    });
  }

  /**
   * Takes up to `limit` due deliveries for `leaseMs`, in one statement: concurrent workers on
   * PostgreSQL skip each other's locked rows; SQLite has a single writer. A worker that dies
   * holding one leaves it to be claimed again when the lease ends.
   */
  async claim(now: number, leaseMs: number, limit: number): Promise<DeliveryRow[]> {
    const rows = await this.db
      .updateTable('notification_deliveries')
      .set({ available_at: now + leaseMs, claimed_at: now })
      .where('id', 'in', (eb) => {
        const due = eb
          .selectFrom('notification_deliveries')
          .select('id')
          .where('state', '=', 'pending')
          .where('available_at', '<=', now)
          .orderBy('available_at')
          .limit(limit);
        return this.engine === 'postgres' ? due.forUpdate().skipLocked() : due;
      })
      .returningAll()
      .execute();
    return rows.sort((a, b) => Number(a.available_at) - Number(b.available_at) || Number(a.id) - Number(b.id));
  }

  /** How many deliveries were collapsed into this one. */
  async collapsedCount(id: number): Promise<number> {
    const row = await this.db
      .selectFrom('notification_deliveries')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('collapsed_into', '=', id)
      .executeTakeFirst();
    return Number(row?.count ?? 0);
  }

  async markSent(id: number, now: number): Promise<void> {
    await this.db.updateTable('notification_deliveries').set({ state: 'sent', sent_at: now, last_error: null }).where('id', '=', id).execute();
  }

  /** Another try at `at`, counting the attempt; `at` undefined: failed for good. */
  async markFailed(id: number, error: string, at: number | undefined): Promise<void> {
    await this.db
      .updateTable('notification_deliveries')
      .set((eb) => ({
        state: at === undefined ? 'failed' : 'pending',
        available_at: at ?? eb.ref('available_at'),
        claimed_at: null,
        attempts: eb('attempts', '+', 1),
        last_error: error.slice(0, 500),
      }))
      .where('id', '=', id)
      .execute();
  }

  /** Not sent and not to be: its recipient lost access, its target is gone. */
  async markDropped(id: number, reason: string): Promise<void> {
    await this.db.updateTable('notification_deliveries').set({ state: 'dropped', last_error: reason.slice(0, 500) }).where('id', '=', id).execute();
  }

  /** Back in the queue at `at` without counting an attempt (its target is busy or its circuit open, its user over the rate). */
  async postpone(id: number, at: number): Promise<void> {
    await this.db.updateTable('notification_deliveries').set({ available_at: at, claimed_at: null }).where('id', '=', id).execute();
  }

  listDeliveries(userId: number, state: string | undefined, limit: number): Promise<DeliveryRow[]> {
    let query = this.db.selectFrom('notification_deliveries').selectAll().where('user_id', '=', userId);
    if (state) query = query.where('state', '=', state);
    return query.orderBy('id', 'desc').limit(limit).execute();
  }

  findDelivery(userId: number, id: number): Promise<DeliveryRow | undefined> {
    return this.db.selectFrom('notification_deliveries').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
  }

  /** A failed delivery queued again with a new retry window; false when it is not failed (any more). */
  async requeue(userId: number, id: number, now: number, expiresAt: number): Promise<boolean> {
    const result = await this.db
      .updateTable('notification_deliveries')
      .set({ state: 'pending', available_at: now, claimed_at: null, attempts: 0, expires_at: expiresAt })
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .where('state', '=', 'failed')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Deliveries waiting to be sent (the queue depth metric). */
  async pendingCount(): Promise<number> {
    const row = await this.db
      .selectFrom('notification_deliveries')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('state', '=', 'pending')
      .executeTakeFirst();
    return Number(row?.count ?? 0);
  }
}

async function countOf(db: Kysely<NotificationsTables>, table: 'notification_rules' | 'notification_targets', userId: number): Promise<number> {
  const row = await db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('count')).where('user_id', '=', userId).executeTakeFirst();
  return Number(row?.count ?? 0);
}

function ruleColumns(fields: RuleFields) {
  return {
    type: fields.type,
    always: fields.always ? 1 : 0,
    channels: JSON.stringify(fields.channels),
    attributes: JSON.stringify(fields.attributes),
    calendar_id: fields.calendarId,
  };
}

async function replaceDevices(trx: Kysely<NotificationsTables>, ruleId: number, fields: RuleFields): Promise<void> {
  if (fields.always || fields.deviceIds.length === 0) return;
  const unique = [...new Set(fields.deviceIds)];
  for (let at = 0; at < unique.length; at += ID_CHUNK) {
    await trx
      .insertInto('notification_rule_devices')
      .values(unique.slice(at, at + ID_CHUNK).map((deviceId) => ({ rule_id: ruleId, device_id: deviceId })))
      .execute();
  }
}
