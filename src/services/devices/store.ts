import type { Kysely } from 'kysely';
import { ClaimTokenRepository } from './claim-tokens/repository.ts';
import { DeviceRepository } from './repository.ts';
import type { DevicesTables } from './tables.ts';

export interface DeviceRepositories {
  devices: DeviceRepository;
  tokens: ClaimTokenRepository;
}

/** The module's repositories, outside or inside one transaction. */
export class DevicesStore implements DeviceRepositories {
  readonly devices: DeviceRepository;
  readonly tokens: ClaimTokenRepository;
  private readonly db: Kysely<DevicesTables>;

  constructor(db: Kysely<DevicesTables>) {
    this.db = db;
    this.devices = new DeviceRepository(db);
    this.tokens = new ClaimTokenRepository(db);
  }

  transaction<T>(work: (repositories: DeviceRepositories) => Promise<T>): Promise<T> {
    return this.db.transaction().execute((trx) => work({ devices: new DeviceRepository(trx), tokens: new ClaimTokenRepository(trx) }));
  }
}

/** A unique or primary-key constraint refused the write (SQLite or PostgreSQL). */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
