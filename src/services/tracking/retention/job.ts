import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import { engineOf } from '../../../platform/db/database.ts';
import type { Engine } from '../../../platform/db/database.ts';
import type { TrackingTables } from '../tables.ts';
import type { Clock } from '../throttled-writer.ts';
import { monthStart, MONTHS_AHEAD, nextMonth, PARTITIONED_TABLES, PartitionRepository } from './partitions.ts';
import type { RetentionPolicy } from './policy.ts';
import { RetentionRepository } from './repository.ts';
import type { IdSpan, RetentionTable } from './repository.ts';

export interface RetentionJobOptions {
  db: Kysely<TrackingTables>;
  policy: RetentionPolicy;
  /** The owner of each of these devices that exists; devices left out are skipped (their deletion removes their data). */
  ownersOf(deviceIds: readonly number[]): Promise<Map<number, number>>;
  /** Ids one delete statement covers, so the rows it removes at most (RETENTION_CHUNK). */
  chunkSize: number;
  /** How long sent commands stay whatever their owner's plan (COMMAND_HISTORY_DAYS); undefined: as long as positions. */
  commandHistoryMs?: number | undefined;
  clock: Clock;
  /** Waits between two chunks, given how long the last one took; by default four times as long, so the job takes at most a fifth of the database's time. */
  pause?: (chunkMs: number) => Promise<void>;
  metrics?: Registry | undefined;
  log: FastifyBaseLogger;
  /** The reports' rows made of what goes (trips, stops and hours that end before the cutoff: docs/reports.md, "Retention"). */
  reports?: { removeBefore(deviceIds: readonly number[], cutoff: number): Promise<void> };
}

/** What one run did. */
export interface RetentionRun {
  startedAt: number;
  positionsDeleted: number;
  eventsDeleted: number;
  commandsDeleted: number;
  partitionsCreated: string[];
  partitionsDropped: string[];
  /** True when the job was stopped before it was through. */
  interrupted: boolean;
}

// Session advisory lock held by the instance running the job ("tsretn").
const RETENTION_LOCK = 0x7473_7265_746e;
// How long the job waits after a chunk, in multiples of the chunk's own time.
const PAUSE_PER_CHUNK_TIME = 4;
// Devices whose owners are asked for at once.
const DEVICE_BATCH = 500;
// The first run after a start comes this soon (or after the interval when that is shorter), so frequent restarts do not starve it.
const FIRST_RUN_DELAY_MS = 60_000;

/**
 * Deletes positions, events and commands older than their owner's retention (DESIGN §5.8, §6), commands also past
 * COMMAND_HISTORY_DAYS: on
 * PostgreSQL it first keeps month partitions created ahead and drops those past every owner's
 * cutoff, then, on both engines, deletes the rest in windows of `chunkSize` ids, oldest first,
 * pausing between windows. One instance runs it at a time: a PostgreSQL advisory lock across processes,
 * and within a process a run never overlaps another (SQLite serves one process).
 */
export class RetentionJob {
  readonly #options: RetentionJobOptions;
  readonly #engine: Engine;
  readonly #repository: RetentionRepository;
  readonly #partitions: PartitionRepository | undefined;
  readonly #pause: (chunkMs: number) => Promise<void>;
  readonly #metrics: RetentionMetrics | undefined;
  #running: Promise<RetentionRun | undefined> | undefined;
  #cancelTimer: (() => void) | undefined;
  #stopped = false;

  constructor(options: RetentionJobOptions) {
    this.#options = options;
    this.#engine = engineOf(options.db);
    this.#repository = new RetentionRepository(options.db);
    this.#partitions = this.#engine === 'postgres' ? new PartitionRepository(options.db) : undefined;
    this.#pause = options.pause ?? ((chunkMs) => sleep(PAUSE_PER_CHUNK_TIME * chunkMs));
    this.#metrics = options.metrics ? retentionMetrics(options.metrics) : undefined;
  }

  /** PostgreSQL: creates this month's partitions and those ahead that are missing; answers their names. */
  async preparePartitions(): Promise<string[]> {
    const partitions = this.#partitions;
    if (!partitions || !(await partitions.isPartitioned('positions'))) return [];
    const now = this.#options.clock.now();
    let through = monthStart(now);
    for (let ahead = 0; ahead < MONTHS_AHEAD; ahead++) through = nextMonth(through);
    const created: string[] = [];
    for (const table of PARTITIONED_TABLES) created.push(...(await partitions.ensureMonths(table, now, through)));
    return created;
  }

  /** Runs the job now; undefined when a run is already under way here or on another instance. */
  run(): Promise<RetentionRun | undefined> {
    if (this.#running) return Promise.resolve(undefined);
    const running = this.#locked(() => this.#runLocked()).finally(() => {
      this.#running = undefined;
    });
    this.#running = running;
    return running;
  }

  /** Runs the job every `intervalMs`, the first time soon after the start. */
  start(intervalMs: number): void {
    this.#schedule(Math.min(intervalMs, FIRST_RUN_DELAY_MS), intervalMs);
  }

  /** No further runs; a run under way stops after its current chunk, and this resolves once it has. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    await this.#running?.catch(() => undefined);
  }

  #schedule(delayMs: number, intervalMs: number): void {
    if (this.#stopped) return;
    this.#cancelTimer = this.#options.clock.after(delayMs, () => {
      this.#cancelTimer = undefined;
      this.run()
        .catch((error: unknown) => this.#options.log.error({ err: error }, 'tracking: the retention job failed; it runs again at its next interval'))
        .finally(() => this.#schedule(intervalMs, intervalMs));
    });
  }

  async #locked(work: () => Promise<RetentionRun>): Promise<RetentionRun | undefined> {
    if (this.#engine !== 'postgres') return work();
    // A session lock on one pinned connection: it holds for the whole run (no transaction kept open) and goes with the connection.
    return this.#options.db.connection().execute(async (connection) => {
      const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_lock(${RETENTION_LOCK}) as locked`.execute(connection);
      if (!rows[0]?.locked) return undefined;
      try {
        return await work();
      } finally {
        await sql`select pg_advisory_unlock(${RETENTION_LOCK})`.execute(connection);
      }
    });
  }

  async #runLocked(): Promise<RetentionRun> {
    const startedAt = this.#options.clock.now();
    const run: RetentionRun = { startedAt, positionsDeleted: 0, eventsDeleted: 0, commandsDeleted: 0, partitionsCreated: [], partitionsDropped: [], interrupted: false };
    run.partitionsCreated = await this.preparePartitions();
    const cutoffs = await this.#cutoffsOfOwners(startedAt);
    const earliest = earliestCutoff(cutoffs);
    if (earliest !== null) run.partitionsDropped = await this.#dropPartitions(earliest);
    // Always: owners of devices with commands only are first asked for their cutoff on the way.
    run.interrupted = !(await this.#deleteInChunks(run, cutoffs));
    this.#metrics?.finished(run, (this.#options.clock.now() - startedAt) / 1000);
    return run;
  }

  /** Drops the month partitions that end at or before `earliest`: every row in them is past every owner's cutoff. */
  async #dropPartitions(earliest: number): Promise<string[]> {
    const partitions = this.#partitions;
    if (!partitions || !(await partitions.isPartitioned('positions'))) return [];
    const dropped: string[] = [];
    for (const { table } of PARTITIONED_TABLES) {
      for (const partition of await partitions.list(table)) {
        if (partition.to > earliest || this.#stopped) continue;
        await (table === 'positions' ? partitions.dropPositions(partition) : partitions.dropEvents(partition));
        this.#metrics?.partitionDropped(table);
        dropped.push(partition.name);
      }
    }
    return dropped;
  }

  /** The cutoff of every owner of a device with positions or events at `now` (devices whose owner is gone are left out). */
  async #cutoffsOfOwners(now: number): Promise<Map<number, number | null>> {
    const cutoffs = new Map<number, number | null>();
    let after = 0;
    for (;;) {
      const batch = await this.#repository.nextDevices(after, DEVICE_BATCH, PARTITIONED);
      if (batch.length === 0) return cutoffs;
      after = batch.at(-1) as number;
      for (const ownerId of (await this.#options.ownersOf(batch)).values()) {
        if (!cutoffs.has(ownerId)) cutoffs.set(ownerId, await this.#options.policy.cutoffOf(ownerId, now));
      }
    }
  }

  /**
   * Deletes what is past each owner's cutoff: first a walk over every device with data, grouping
   * them by cutoff with the span of ids each table holds past it, then, group by group, windows of
   * `chunkSize` ids from the oldest up, pausing after each window that deleted anything (rows of
   * other groups, newer rows and latest positions in a window stay). False when stopped on the way.
   */
  async #deleteInChunks(run: RetentionRun, cutoffs: Map<number, number | null>): Promise<boolean> {
    const { groups, devicesByCutoff } = await this.#groupsPastCutoff(cutoffs, run.startedAt);
    // Every device's, whether its old positions go row by row below or went with a dropped partition.
    for (const [cutoff, deviceIds] of devicesByCutoff) await this.#options.reports?.removeBefore(deviceIds, cutoff);
    for (const { table, cutoff, deviceIds, span } of groups.values()) {
      for (let from = span.low; from <= span.high; from += this.#options.chunkSize) {
        if (this.#stopped) return false;
        const started = performance.now();
        const count = await this.#repository.deleteWindow(table, deviceIds, cutoff, from, from + this.#options.chunkSize);
        run[DELETED_COUNT[table]] += count;
        this.#metrics?.deleted(table, count);
        if (count > 0) await this.#pause(performance.now() - started);
      }
    }
    return true;
  }

  /** What goes of `table` for an owner whose history goes before `ownerCutoff`: commands also past COMMAND_HISTORY_DAYS. */
  #cutoffIn(table: RetentionTable, ownerCutoff: number | null, now: number): number | null {
    const { commandHistoryMs } = this.#options;
    if (table !== 'commands' || commandHistoryMs === undefined) return ownerCutoff;
    return Math.max(ownerCutoff ?? Number.NEGATIVE_INFINITY, now - commandHistoryMs);
  }

  /**
   * The devices with rows past their cutoff, grouped by table and cutoff, with the span of ids each group holds past it;
   * and every device walked, by its owner's cutoff.
   * An owner first seen here (a device that got its first positions since the first walk, or that has only commands) is
   * asked for its cutoff now.
   */
  async #groupsPastCutoff(cutoffs: Map<number, number | null>, now: number): Promise<{ groups: Map<string, CutoffGroup>; devicesByCutoff: Map<number, number[]> }> {
    const groups = new Map<string, CutoffGroup>();
    const devicesByCutoff = new Map<number, number[]>();
    let after = 0;
    for (;;) {
      const batch = await this.#repository.nextDevices(after, DEVICE_BATCH, RETENTION_TABLES);
      if (batch.length === 0) return { groups, devicesByCutoff };
      after = batch.at(-1) as number;
      const owners = await this.#options.ownersOf(batch);
      for (const deviceId of batch) {
        const ownerId = owners.get(deviceId);
        if (ownerId === undefined) continue;
        if (!cutoffs.has(ownerId)) cutoffs.set(ownerId, await this.#options.policy.cutoffOf(ownerId, now));
        const ownerCutoff = cutoffs.get(ownerId) ?? null;
        if (ownerCutoff !== null) devicesByCutoff.set(ownerCutoff, [...(devicesByCutoff.get(ownerCutoff) ?? []), deviceId]);
        for (const table of RETENTION_TABLES) {
          const cutoff = this.#cutoffIn(table, ownerCutoff, now);
          if (cutoff === null) continue;
          const span = await this.#repository.idSpan(table, deviceId, cutoff);
          if (!span) continue;
          const key = `${table}:${cutoff}`;
          const group = groups.get(key);
          if (!group) {
            groups.set(key, { table, cutoff, deviceIds: [deviceId], span });
            continue;
          }
          group.deviceIds.push(deviceId);
          group.span = { low: Math.min(group.span.low, span.low), high: Math.max(group.span.high, span.high) };
        }
      }
    }
  }
}

/** Devices of one table whose rows before one cutoff go, and the ids those rows lie between. */
interface CutoffGroup {
  table: RetentionTable;
  cutoff: number;
  deviceIds: number[];
  span: IdSpan;
}

const RETENTION_TABLES: readonly RetentionTable[] = ['positions', 'events', 'commands'];
/** The tables whose owners' cutoffs bound the partitions that may go. */
const PARTITIONED: readonly RetentionTable[] = PARTITIONED_TABLES.map(({ table }) => table);
const DELETED_COUNT = { positions: 'positionsDeleted', events: 'eventsDeleted', commands: 'commandsDeleted' } as const satisfies Record<RetentionTable, keyof RetentionRun>;

/**
 * The earliest cutoff of the owners holding data: everything older goes for all of them, so whole partitions may go.
 * Null when there is no such owner or one of them keeps everything.
 */
function earliestCutoff(cutoffs: Map<number, number | null>): number | null {
  if (cutoffs.size === 0) return null;
  let earliest = Number.POSITIVE_INFINITY;
  for (const cutoff of cutoffs.values()) {
    if (cutoff === null) return null;
    earliest = Math.min(earliest, cutoff);
  }
  return earliest;
}

interface RetentionMetrics {
  deleted(table: string, count: number): void;
  partitionDropped(table: string): void;
  finished(run: RetentionRun, seconds: number): void;
}

function retentionMetrics(registry: Registry): RetentionMetrics {
  const deletedRows = new Counter({
    name: 'trackstack_retention_deleted_rows_total',
    help: 'Positions, events and commands the retention job deleted in chunks, by table (rows of dropped partitions not counted)',
    labelNames: ['table'] as const,
    registers: [registry],
  });
  const droppedPartitions = new Counter({
    name: 'trackstack_retention_dropped_partitions_total',
    help: 'Month partitions the retention job dropped whole, by table',
    labelNames: ['table'] as const,
    registers: [registry],
  });
  const lastRun = new Gauge({
    name: 'trackstack_retention_last_run_timestamp_seconds',
    help: 'When the last completed retention run on this instance started (Unix time)',
    registers: [registry],
  });
  const lastDuration = new Gauge({
    name: 'trackstack_retention_last_run_duration_seconds',
    help: 'How long the last completed retention run on this instance took',
    registers: [registry],
  });
  for (const table of RETENTION_TABLES) deletedRows.inc({ table }, 0);
  for (const table of PARTITIONED) droppedPartitions.inc({ table }, 0);
  return {
    deleted: (table, count) => deletedRows.inc({ table }, count),
    partitionDropped: (table) => droppedPartitions.inc({ table }),
    finished(run, seconds) {
      if (run.interrupted) return;
      lastRun.set(run.startedAt / 1000);
      lastDuration.set(seconds);
    },
  };
}
