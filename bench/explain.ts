import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Kysely, PostgresDialect } from 'kysely';
import type { CompiledQuery, Kysely as KyselyType } from 'kysely';
import pg from 'pg';
import { openDatabase } from '../src/platform/db/database.ts';
import { migrateModules } from '../src/platform/db/migrations.ts';
import { trackingMigrations } from '../src/services/tracking/module.ts';
import { RetentionRepository } from '../src/services/tracking/retention/repository.ts';
import { TrackingStore } from '../src/services/tracking/store.ts';
import type { TrackingTables } from '../src/services/tracking/tables.ts';
import { freshDatabase } from './ingestion.ts';
import { loadFleetHistory } from './scale-data.ts';
import type { FleetHistory } from './scale-data.ts';

/**
 * `node bench/explain.ts`: the PostgreSQL plans of the reads that must stay fast as history grows,
 * and of the retention job's statements, written to docs/sql/explain-*.txt and committed, so a
 * change of plan shows in review. The SQL is what the repositories send (captured from Kysely, which
 * runs it once), run again under EXPLAIN ANALYZE without costs or timings, on a fleet of 1 000
 * devices reporting every two hours from March to June 2026 in monthly partitions. Needs
 * BENCH_DATABASE_URL (or TEST_DATABASE_URL): a server where a database may be created.
 */
export const EXPLAIN_FLEET: FleetHistory = {
  devices: 1000,
  stepMs: 2 * 3_600_000,
  reportsPerDevice: 12 * 106,
  until: Date.UTC(2026, 5, 15),
  eventEvery: 2,
};

const DAY_MS = 86_400_000;

interface Explained {
  file: string;
  title: string;
  run(db: KyselyType<TrackingTables>): Promise<unknown>;
}

const DEVICE = 421;
const DAY = { from: EXPLAIN_FLEET.until - 3 * DAY_MS, to: EXPLAIN_FLEET.until - 2 * DAY_MS - 1 };
/** A cutoff a week into the fleet's history, as the retention job would have it for a plan of 100 days. */
const CUTOFF = EXPLAIN_FLEET.until - 100 * DAY_MS;
const store = (db: KyselyType<TrackingTables>) => new TrackingStore(db);
const retention = (db: KyselyType<TrackingTables>) => new RetentionRepository(db);

const QUERIES: Explained[] = [
  {
    file: 'explain-history.txt',
    title: `One device-day of history: PositionRepository.historyPage (device ${DEVICE}, one UTC day, first page)`,
    run: (db) => store(db).positions.historyPage(DEVICE, DAY, undefined, 5000),
  },
  {
    file: 'explain-latest.txt',
    title: 'Latest positions of 1 000 devices: PositionRepository.latestOf (devices 1..1000)',
    run: (db) => store(db).positions.latestOf(Array.from({ length: 1000 }, (_, index) => index + 1)),
  },
  {
    file: 'explain-events.txt',
    title: `One device's events for a day: EventRepository.list (device ${DEVICE}, every type, one UTC day)`,
    run: (db) => store(db).events.list({ deviceIds: [DEVICE], range: DAY, types: [], limit: 1000 }),
  },
  {
    file: 'explain-retention-span.txt',
    title: `The ids of one device's positions past a cutoff: RetentionRepository.idSpan (device ${DEVICE}, 100 days kept)`,
    run: (db) => retention(db).idSpan('positions', DEVICE, CUTOFF),
  },
  {
    // Last: EXPLAIN ANALYZE carries the delete out.
    file: 'explain-retention-window.txt',
    title: 'One window of the retention job: RetentionRepository.deleteWindow (devices 1..1000, ids 1 to 5 000, 100 days kept)',
    run: (db) => retention(db).deleteWindow('positions', Array.from({ length: 1000 }, (_, index) => index + 1), CUTOFF, 1, 5001),
  },
];

/** Runs `work` against a Kysely that records the SQL it sends instead of keeping results. */
async function captured(pool: pg.Pool, work: (db: KyselyType<TrackingTables>) => Promise<unknown>): Promise<CompiledQuery[]> {
  const queries: CompiledQuery[] = [];
  const db = new Kysely<TrackingTables>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      queries.push(event.query);
    },
  });
  await work(db);
  return queries;
}

/** `$1, $2, …, $1000` and `{1,2,…,1000}` for lists of more than eight. */
function shortenLists(text: string): string {
  return text
    .replace(/\$(\d+)(?:, \$\d+){7,}, \$(\d+)/g, '$$$1, …, $$$2')
    .replace(/\{(\d+)(?:,\d+){7,},(\d+)\}/g, '{$1,…,$2}');
}

export async function explainQueries(url: string): Promise<Map<string, string>> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const outputs = new Map<string, string>();
  try {
    for (const query of QUERIES) {
      const [compiled] = await captured(pool, (db) => query.run(db));
      if (!compiled) throw new Error(`${query.file}: no query was sent`);
      const plan = await pool.query<{ 'QUERY PLAN': string }>(
        `explain (analyze, costs off, timing off, summary off, buffers off) ${compiled.sql}`,
        compiled.parameters as unknown[],
      );
      const shown = compiled.parameters.map((value) => (Array.isArray(value) && value.length > 8 ? `{${value[0]},…,${value.at(-1)}} (${value.length} in all)` : value));
      const parameters = shown.length > 8 ? `${shown.slice(0, 8).join(', ')}, … (${shown.length} in all)` : shown.join(', ');
      const text = [
        `-- ${query.title}`,
        '-- Generated by `node bench/explain.ts`; do not edit by hand. Long lists of ids are shortened.',
        '',
        compiled.sql,
        `-- parameters: ${parameters}`,
        '',
        ...plan.rows.map((row) => row['QUERY PLAN']),
        '',
      ].join('\n');
      outputs.set(query.file, shortenLists(text));
    }
  } finally {
    await pool.end();
  }
  return outputs;
}

if (import.meta.main) {
  const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  if (!adminUrl) {
    console.log('explain: skipped; set BENCH_DATABASE_URL (or TEST_DATABASE_URL) to a PostgreSQL server where a database may be created');
  } else {
    const database = await freshDatabase('postgres', tmpdir(), adminUrl);
    try {
      const opened = openDatabase({ engine: 'postgres', url: database.url });
      try {
        await migrateModules(opened, [trackingMigrations]);
        await loadFleetHistory(opened.db as KyselyType<TrackingTables>, EXPLAIN_FLEET, true);
      } finally {
        await opened.close();
      }
      const folder = path.resolve(import.meta.dirname, '../docs/sql');
      mkdirSync(folder, { recursive: true });
      for (const [file, text] of await explainQueries(database.url)) {
        writeFileSync(path.join(folder, file), text);
        console.log(`wrote docs/sql/${file}`);
      }
    } finally {
      await database.drop();
    }
  }
}
