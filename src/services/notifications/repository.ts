import { sql } from 'kysely';
import type { Expression, Insertable, Kysely, RawBuilder, Selectable } from 'kysely';
import type { Database } from '../../platform/db/database.ts';
import { lockKey } from '../../platform/db/locks.ts';
import { TableAccess } from '../../platform/db/table-access.ts';
import { DeadLetterRepository } from '../../platform/work/dead-letters.ts';
import type { QueueDepth } from '../../platform/work/queue.ts';
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

/** The deliveries' queue name: their dead letters' `queue` and their metrics' label (the consumer is the channel). */
export const DELIVERIES_QUEUE = 'deliveries';
const ID_CHUNK = 1000;
/** Deliveries one insert writes: 200 rows of 20 columns stay far below SQLite's bound-parameter limit. */
const QUEUE_CHUNK = 200;

/** How many more deliveries each user and webhook host may take in one claim. */
export interface ClaimRoom {
  perUser: number;
  perHost: number;
  /** Users with deliveries in hand here, and how many more each may take (0: none). */
  users: ReadonlyMap<number, number>;
  hosts: ReadonlyMap<string, number>;
}

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
   * Inserts the deliveries of a batch of facts, in chunks of multi-row inserts, each chunk its own
   * short transaction, so no transaction grows with the number of rows. A delivery whose (event,
   * recipient) is queued already is left as it is (a fact handled twice queues nothing twice). A mail
   * or push delivery whose collapse key has a message waiting for its window is recorded as collapsed
   * into it; one whose key was sent or queued within `windowMs` waits for the end of that window, so
   * the repeats fold into it.
   */
  async queue(rows: readonly NewDeliveryRow[], now: number, windowMs: number): Promise<number> {
    let queued = 0;
    for (let at = 0; at < rows.length; at += QUEUE_CHUNK) queued += await this.#queueChunk(rows.slice(at, at + QUEUE_CHUNK), now, windowMs);
    return queued;
  }

  async #queueChunk(rows: readonly NewDeliveryRow[], now: number, windowMs: number): Promise<number> {
    const keys = [...new Set(rows.map((row) => row.collapse_key).filter((key): key is string => typeof key === 'string'))];
    return this.db.transaction().execute(async (trx) => {
      // Per collapse key: the waiting message repeats fold into (a stored id, or a row of this chunk), and when the last one was queued.
      const carriers = new Map<string, number | NewDeliveryRow>();
      const lastQueued = new Map<string, number>();
      if (keys.length > 0) {
        let waiting = trx
          .selectFrom('notification_deliveries')
          .select(['id', 'collapse_key'])
          .where('collapse_key', 'in', keys)
          .where('state', '=', 'pending')
          .where('claimed_at', 'is', null)
          .where('available_at', '>', now)
          .where('collapsed_into', 'is', null)
          .orderBy('id');
        // Locked, so a worker claiming one meanwhile either waits for this or is seen to have taken it.
        if (this.engine === 'postgres') waiting = waiting.forUpdate();
        for (const row of await waiting.execute()) if (!carriers.has(row.collapse_key as string)) carriers.set(row.collapse_key as string, Number(row.id));
        const recent = await trx
          .selectFrom('notification_deliveries')
          .select((eb) => ['collapse_key', eb.fn.max('created_at').as('last')])
          .where('collapse_key', 'in', keys)
          .where('created_at', '>', now - windowMs)
          .where('state', 'in', ['pending', 'sent'])
          .groupBy('collapse_key')
          .execute();
        for (const row of recent) lastQueued.set(row.collapse_key as string, Number(row.last));
      }
      // In the events' order; a repeat of a row of this chunk learns its carrier's id once both are written.
      const values: NewDeliveryRow[] = [];
      const following = new Map<string, NewDeliveryRow>();
      for (const row of rows) {
        const key = row.collapse_key;
        const carrier = key ? carriers.get(key) : undefined;
        if (!key) {
          values.push(row);
        } else if (carrier !== undefined) {
          const repeat = { ...row, state: 'collapsed', available_at: now, collapsed_into: typeof carrier === 'number' ? carrier : null };
          if (typeof carrier !== 'number') following.set(repeat.delivery_id, carrier);
          values.push(repeat);
        } else {
          const last = lastQueued.get(key);
          const first = last === undefined ? row : { ...row, available_at: Math.max(Number(row.available_at), last + windowMs) };
          values.push(first);
          if (Number(first.available_at) > now) carriers.set(key, first);
          lastQueued.set(key, Number(first.created_at));
        }
      }
      if (values.length === 0) return 0;
      const inserted = await trx.insertInto('notification_deliveries').values(values).onConflict((oc) => oc.doNothing()).returning(['id', 'delivery_id']).execute();
      const ids = new Map(inserted.map((row) => [row.delivery_id, Number(row.id)]));
      const repeatsOf = new Map<number, number[]>();
      for (const [deliveryId, carrier] of following) {
        const repeat = ids.get(deliveryId);
        const into = ids.get(carrier.delivery_id);
        // Both are new, or both were queued when the fact was handled before.
        if (repeat === undefined || into === undefined) continue;
        repeatsOf.set(into, [...(repeatsOf.get(into) ?? []), repeat]);
      }
      for (const [into, repeats] of repeatsOf) await trx.updateTable('notification_deliveries').set({ collapsed_into: into }).where('id', 'in', repeats).execute();
      return inserted.length;
    });
  }

  /**
   * Takes up to `limit` due deliveries for `leaseMs`, in one statement, turn by turn across users
   * (each user's oldest first, then each one's second, …), so one user's backlog never stands in
   * front of another's. Users and webhook hosts at their concurrency in this process are skipped, not
   * claimed and put back: `room` says how many more each may take. Concurrent workers on PostgreSQL
   * each update only rows still due, so none is claimed twice; SQLite has a single writer. A worker
   * that dies holding one leaves it to be claimed again when the lease ends. Each claim writes its
   * `lease` and counts one on `claims`, which an outcome gives back.
   */
  async claim(now: number, leaseMs: number, limit: number, room: ClaimRoom, lease: string): Promise<DeliveryRow[]> {
    const fullUsers = [...room.users].filter(([, free]) => free <= 0).map(([user]) => user);
    const fullHosts = [...room.hosts].filter(([, free]) => free <= 0).map(([host]) => host);
    const userRoom = roomFor(sql.ref('user_id'), [...room.users].filter(([, free]) => free > 0), room.perUser);
    const hostRoom = roomFor(sql.ref('host'), [...room.hosts].filter(([, free]) => free > 0), room.perHost);
    const skipUsers = fullUsers.length > 0 ? sql`and user_id not in (${sql.join(fullUsers)})` : sql``;
    const skipHosts = fullHosts.length > 0 ? sql`and (host is null or host not in (${sql.join(fullHosts)}))` : sql``;
    const result = await sql<DeliveryRow>`
      update notification_deliveries set available_at = ${now + leaseMs}, claimed_at = ${now}, lease = ${lease}, claims = claims + 1
      where id in (
        select id from (
          select id, user_id, host, available_at,
            row_number() over (partition by user_id order by available_at, id) as user_turn,
            row_number() over (partition by host order by available_at, id) as host_turn
          from notification_deliveries
          where state = 'pending' and available_at <= ${now} ${skipUsers} ${skipHosts}
        ) ranked
        where user_turn <= ${userRoom} and (host is null or host_turn <= ${hostRoom})
        order by user_turn, available_at, id
        limit ${limit}
      ) and state = 'pending' and available_at <= ${now}
      returning *`.execute(this.db);
    return result.rows.sort((a, b) => Number(a.available_at) - Number(b.available_at) || Number(a.id) - Number(b.id));
  }

  /**
   * A user's waiting deliveries on `channels` that are not claimed wait until `until` (the end of
   * the rate window that holds them back), in one statement: none is claimed before then.
   */
  async holdBack(userId: number, channels: readonly string[], until: number): Promise<void> {
    await this.db
      .updateTable('notification_deliveries')
      .set({ available_at: until })
      .where('user_id', '=', userId)
      .where('channel', 'in', channels)
      .where('state', '=', 'pending')
      .where('claimed_at', 'is', null)
      .where('available_at', '<', until)
      .execute();
  }

  /**
   * The waiting deliveries to one target that are not claimed wait until `until` (its circuit is
   * open), in one statement: a webhook rule's, a push target's, or every mail (one relay).
   */
  async holdBackTarget(target: { channel: string; ruleId?: number; target?: string }, until: number): Promise<void> {
    let query = this.db
      .updateTable('notification_deliveries')
      .set({ available_at: until })
      .where('channel', '=', target.channel)
      .where('state', '=', 'pending')
      .where('claimed_at', 'is', null)
      .where('available_at', '<', until);
    if (target.ruleId !== undefined) query = query.where('rule_id', '=', target.ruleId);
    if (target.target !== undefined) query = query.where('target', '=', target.target);
    await query.execute();
  }

  /**
   * Deletes up to `limit` deliveries created before `before` that are sent, dropped, or collapsed
   * into a message no longer waiting; failed ones stay for their owner's failure list. Answers how
   * many went.
   */
  async pruneDone(before: number, limit: number): Promise<number> {
    const result = await this.db
      .deleteFrom('notification_deliveries')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('notification_deliveries as done')
          .select('done.id')
          .where('done.created_at', '<', before)
          .where((where) =>
            where.or([
              where('done.state', 'in', ['sent', 'dropped']),
              where.and([
                where('done.state', '=', 'collapsed'),
                where.not(
                  where.exists(
                    where.selectFrom('notification_deliveries as carrier').select('carrier.id').whereRef('carrier.id', '=', 'done.collapsed_into').where('carrier.state', '=', 'pending'),
                  ),
                ),
              ]),
            ]),
          )
          .limit(limit),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
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

  /** Pushes the lease of the deliveries a claim still holds to `until`. */
  async renew(ids: readonly number[], lease: string, until: number): Promise<void> {
    if (ids.length === 0) return;
    await this.db.updateTable('notification_deliveries').set({ available_at: until }).where('id', 'in', ids).where('lease', '=', lease).where('state', '=', 'pending').execute();
  }

  async markSent(id: number, lease: string, now: number): Promise<void> {
    await this.#held(id, lease).set({ state: 'sent', sent_at: now, last_error: null, claims: 0, lease: null }).execute();
  }

  /** The endpoint's answer calls for another try at `at`, counting the attempt; `at` undefined: failed for good. */
  async markFailed(id: number, lease: string, error: string, at: number | undefined): Promise<void> {
    await this.#held(id, lease)
      .set((eb) => ({
        state: at === undefined ? 'failed' : 'pending',
        available_at: at ?? eb.ref('available_at'),
        claimed_at: null,
        lease: null,
        attempts: eb('attempts', '+', 1),
        claims: 0,
        last_error: error.slice(0, 500),
      }))
      .execute();
  }

  /** Not sent and not to be: its recipient lost access, its target is gone. */
  async markDropped(id: number, lease: string, reason: string): Promise<void> {
    await this.#held(id, lease).set({ state: 'dropped', last_error: reason.slice(0, 500), claims: 0, lease: null }).execute();
  }

  /** Back in the queue at `at` without counting an attempt or a claim (its target is busy or its circuit open, its user over the rate, the process stopping). */
  async postpone(ids: readonly number[], lease: string, at: number): Promise<void> {
    if (ids.length === 0) return;
    await this.db
      .updateTable('notification_deliveries')
      .set((eb) => ({ available_at: at, claimed_at: null, lease: null, claims: eb('claims', '-', 1) }))
      .where('id', 'in', ids)
      .where('lease', '=', lease)
      .execute();
  }

  /** Its handler crashed or timed out: due again at `at`, the claim counted; the claim is over, so a handler that ends late writes nothing. */
  async crashed(id: number, lease: string, at: number, error: string): Promise<void> {
    await this.#held(id, lease).set({ available_at: at, claimed_at: null, lease: null, last_error: error.slice(0, 500) }).execute();
  }

  /**
   * Its handler crashed past the cap: failed, in its owner's list, and a dead letter for the
   * administrators (`source_id` names the delivery), in one transaction. A delivery another claim
   * holds since is not touched.
   */
  async deadLetter(row: DeliveryRow, lease: string, error: string, now: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const failed = await trx
        .updateTable('notification_deliveries')
        .set({ state: 'failed', claimed_at: null, lease: null, last_error: error.slice(0, 500) })
        .where('id', '=', Number(row.id))
        .where('lease', '=', lease)
        .where('state', '=', 'pending')
        .executeTakeFirst();
      if (Number(failed.numUpdatedRows) === 0) return;
      await DeadLetterRepository.insert(trx, {
        queue: DELIVERIES_QUEUE,
        consumer: row.channel,
        topic: 'notification',
        source_id: Number(row.id),
        payload: JSON.stringify({ deliveryId: row.delivery_id, userId: Number(row.user_id), ruleId: Number(row.rule_id), eventId: Number(row.event_id) }),
        attempts: Number(row.claims),
        last_error: error.slice(0, 500),
        created_at: Number(row.created_at),
        failed_at: now,
      });
    });
  }

  /** Puts the dead-lettered deliveries of `channels` an administrator asked to retry back in the queue with a new retry window; how many. */
  async restoreRequested(channels: readonly string[], now: number, limit: number, expiresAt: number): Promise<number> {
    if (channels.length === 0) return 0;
    return this.db.transaction().execute(async (trx) => {
      const letters = await DeadLetterRepository.takeRequested(trx, DELIVERIES_QUEUE, channels, limit);
      const ids = letters.flatMap((letter) => (letter.source_id === null ? [] : [Number(letter.source_id)]));
      if (ids.length === 0) return 0;
      await trx
        .updateTable('notification_deliveries')
        .set({ state: 'pending', available_at: now, claimed_at: null, lease: null, attempts: 0, claims: 0, expires_at: expiresAt })
        .where('id', 'in', ids)
        .where('state', '=', 'failed')
        .execute();
      return letters.length;
    });
  }

  /** Deliveries waiting to be sent per channel, and since when the oldest (the queue metrics). */
  async depth(channels: readonly string[]): Promise<QueueDepth[]> {
    if (channels.length === 0) return [];
    const rows = await this.db
      .selectFrom('notification_deliveries')
      .select(['channel', (eb) => eb.fn.countAll<number>().as('depth'), (eb) => eb.fn.min('created_at').as('oldest')])
      .where('state', '=', 'pending')
      .where('channel', 'in', channels)
      .groupBy('channel')
      .execute();
    return rows.map((row) => ({ consumer: row.channel, depth: Number(row.depth), oldestAt: row.oldest === null ? null : Number(row.oldest) }));
  }

  /** The delivery while `lease` holds it: a claim whose lease lapsed and was taken since writes nothing. */
  #held(id: number, lease: string) {
    return this.db.updateTable('notification_deliveries').where('id', '=', id).where('lease', '=', lease);
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
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable('notification_deliveries')
        .set({ state: 'pending', available_at: now, claimed_at: null, lease: null, attempts: 0, claims: 0, expires_at: expiresAt })
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .where('state', '=', 'failed')
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) return false;
      // Its owner's retry answers a dead letter too: the administrators' list no longer shows it.
      await DeadLetterRepository.discard(trx, DELIVERIES_QUEUE, id);
      return true;
    });
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

/** `case column when key then free … else full end`: the room of each key listed, `full` for the others. */
function roomFor(column: Expression<unknown>, listed: readonly (readonly [number | string, number])[], full: number): RawBuilder<number> {
  // Cast, so PostgreSQL types the parameters as numbers rather than text.
  if (listed.length === 0) return sql<number>`cast(${full} as integer)`;
  return sql<number>`case ${column} ${sql.join(
    listed.map(([key, free]) => sql`when ${key} then cast(${free} as integer)`),
    sql` `,
  )} else cast(${full} as integer) end`;
}
