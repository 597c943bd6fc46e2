import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { CompiledQuery, Kysely, PostgresAdapter, PostgresDialect, SqliteDialect, SqliteDriver, sql } from 'kysely';
import type { DatabaseConnection, Driver, SqliteDialectConfig } from 'kysely';
import pg from 'pg';
import type { DatabaseConfig } from '../../config.ts';
import { keepPrivate, makePrivateDir } from '../private-files.ts';

export type Engine = 'sqlite' | 'postgres';

/**
 * One database handle shared by every module. Each module narrows `db` to its own tables
 * (`database.db as Kysely<AuthTables>`), so a module's types only know the tables it owns.
 */
export interface Database {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- narrowed per module
  readonly db: Kysely<any>;
  readonly engine: Engine;
  /** Resolves true when a trivial query answers within the timeout. */
  ping(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

/** The engine behind a handle, a transaction or a handle with plugins, from its dialect. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any tables
export function engineOf(db: Kysely<any>): Engine {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

const INT8_OID = 20;
const NUMERIC_OID = 1700;

export function openDatabase(config: DatabaseConfig): Database {
  if (config.engine === 'sqlite') return openSqlite(config.file);
  return openPostgres(config.url);
}

function openSqlite(file: string): Database {
  if (file !== ':memory:') makePrivateFile(file);
  const connection = new SqliteDatabase(file);
  connection.pragma('journal_mode = WAL');
  connection.pragma('synchronous = NORMAL');
  connection.pragma('foreign_keys = ON');
  connection.pragma('busy_timeout = 5000');
  const db = new Kysely({ dialect: new ImmediateSqliteDialect({ database: withStatementCache(connection) }) });
  return wrap(db, 'sqlite');
}

/**
 * Transactions begin IMMEDIATE, taking the write lock at BEGIN (waiting up to busy_timeout for
 * another process's). In one process Kysely lends the one connection to one transaction at a time;
 * this is for several processes on one file: a deferred transaction that reads, then writes, fails
 * with SQLITE_BUSY_SNAPSHOT when another process wrote in between, where an immediate one waits and
 * reads what the other wrote (a count checked against a cap, locks.ts).
 */
class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;

  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config);
  }
}

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/**
 * The database holds every user's data: it is created 0600 in a 0700 folder before SQLite opens it
 * (SQLite would make it 0644). SQLite gives its -wal and -shm files the database's mode; existing
 * ones are narrowed too.
 */
function makePrivateFile(file: string): void {
  makePrivateDir(path.dirname(file));
  closeSync(openSync(file, 'a', 0o600));
  for (const part of [file, `${file}-wal`, `${file}-shm`]) keepPrivate(part);
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query anew; on better-sqlite3 preparing costs more than running a small
 * query, so prepared statements are kept by SQL text (least recently used dropped first). Reuse
 * is safe because Kysely runs one query at a time on this single connection.
 */
function withStatementCache(connection: SqliteDatabase.Database) {
  const statements = new Map<string, SqliteDatabase.Statement>();
  return {
    close: () => connection.close(),
    prepare(sqlText: string) {
      let statement = statements.get(sqlText);
      if (statement) {
        statements.delete(sqlText);
      } else {
        statement = connection.prepare(sqlText);
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value as string);
      }
      statements.set(sqlText, statement);
      return statement;
    },
  };
}

function openPostgres(url: string): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: 3000,
    idleTimeoutMillis: 30_000,
    // Ids and epoch-millisecond timestamps are int8; they stay well inside 2^53.
    types: {
      getTypeParser: (oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID || oid === NUMERIC_OID ? Number : pg.types.getTypeParser(oid, format as 'text'),
    },
  });
  // A client losing its server must not crash the process, idle or checked out: the query in
  // flight (or the next ping) reports the failure.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = new Kysely({ dialect: new PostgresDialect({ pool }) });
  return wrap(db, 'postgres');
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see Database.db
function wrap(db: Kysely<any>, engine: Engine): Database {
  return {
    db,
    engine,
    async ping(timeoutMs = 2000) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      });
      const query = sql`select 1`.execute(db).then(
        () => true,
        () => false,
      );
      try {
        return await Promise.race([query, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => db.destroy(),
  };
}
