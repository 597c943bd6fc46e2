import type { Kysely } from 'kysely';
import type { Engine } from './database.ts';

/**
 * What a repository or a store holds: its module's tables, inside or outside a transaction, and the
 * engine, for the statements SQLite and PostgreSQL spell differently.
 */
export abstract class TableAccess<Tables> {
  protected readonly db: Kysely<Tables>;
  protected readonly engine: Engine;

  constructor(db: Kysely<Tables>, engine: Engine) {
    this.db = db;
    this.engine = engine;
  }
}
