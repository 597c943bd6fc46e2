import type { Kysely } from 'kysely';
import { engineOf } from './database.ts';
import type { Engine } from './database.ts';

/**
 * What every repository and store holds: its module's tables, inside or outside a transaction, and
 * the engine (read from the handle's dialect), for the statements SQLite and PostgreSQL spell
 * differently.
 */
export abstract class TableAccess<Tables> {
  protected readonly db: Kysely<Tables>;
  protected readonly engine: Engine;

  constructor(db: Kysely<Tables>) {
    this.db = db;
    this.engine = engineOf(db);
  }
}
