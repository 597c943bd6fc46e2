import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import SqliteDatabase from 'better-sqlite3';
import { CompiledQuery, Kysely, PostgresAdapter, PostgresDialect, SqliteDialect, SqliteDriver, sql } from 'kysely';
import type { DatabaseConnection, Driver, QueryResult, SqliteDialectConfig } from 'kysely';
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
  // Waits for another connection's write lock happen in PatientConnection, off the event loop.
  connection.pragma('busy_timeout = 0');
  const db = new Kysely({ dialect: new ImmediateSqliteDialect({ database: withStatementCache(connection) }) });
  return wrap(db, 'sqlite');
}

/**
 * Transactions begin IMMEDIATE, taking the write lock at BEGIN. In one process Kysely lends the one
 * connection to one transaction at a time; this is for several connections on one file: a deferred
 * transaction that reads, then writes, fails with SQLITE_BUSY_SNAPSHOT when another connection wrote
 * in between, where an immediate one waits and reads what the other wrote (a count checked against a
 * cap, locks.ts).
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
  #patient: PatientConnection | undefined;

  override async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await super.acquireConnection();
    if (this.#patient?.inner !== connection) this.#patient = new PatientConnection(connection);
    return this.#patient;
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(BEGIN_IMMEDIATE);
  }
}

const BEGIN_IMMEDIATE = CompiledQuery.raw('begin immediate');

/** How long a statement waits for another connection's write lock before SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5000;

/**
 * Retries a statement refused with SQLITE_BUSY, pausing asynchronously, for up to BUSY_TIMEOUT_MS.
 * better-sqlite3's own busy_timeout waits synchronously: it blocks the event loop, so a connection of
 * the same process (two instances in one process, as tests run them) holding the lock across an await
 * could never finish, and every waiter would fail after the whole timeout. A refused statement did
 * not run, so running it again is safe.
 */
class PatientConnection implements DatabaseConnection {
  readonly inner: DatabaseConnection;

  constructor(inner: DatabaseConnection) {
    this.inner = inner;
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const deadline = Date.now() + BUSY_TIMEOUT_MS;
    for (let pauseMs = 1; ; pauseMs = Math.min(pauseMs * 2, 50)) {
      try {
        return await this.inner.executeQuery<R>(query);
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw error;
      }
      await sleep(pauseMs);
    }
  }

  streamQuery<R>(query: CompiledQuery, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
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
