import type { Kysely } from 'kysely';
import { OWNER, refusal } from '../../platform/access-policy.ts';
import type { Caller } from '../../platform/access-policy.ts';
import { TableAccess } from '../../platform/db/table-access.ts';
import { ClaimTokenRepository } from './claim-tokens/repository.ts';
import { AppError } from './errors.ts';
import { DeviceRepository } from './repository.ts';
import type { DeviceWithToken } from './repository.ts';
import type { DevicesTables } from './tables.ts';

export interface DeviceRepositories {
  devices: DeviceRepository;
  tokens: ClaimTokenRepository;
}

/** The module's repositories, outside or inside one transaction. */
export class DevicesStore extends TableAccess<DevicesTables> implements DeviceRepositories {
  readonly devices: DeviceRepository;
  readonly tokens: ClaimTokenRepository;

  constructor(db: Kysely<DevicesTables>) {
    super(db);
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

/** The device, or 404 NOT_FOUND when there is none. */
export async function requireDevice(store: DevicesStore, deviceId: number): Promise<DeviceWithToken> {
  const row = await store.devices.findById(deviceId);
  if (!row) throw new AppError('NOT_FOUND', 'No such device');
  return row;
}

/**
 * The device (else 404) once the access policy lets the caller do an owner's `action` on it; the
 * row's owner decides, so no grants are read.
 */
export async function requireDeviceFor(store: DevicesStore, caller: Caller & { id: number }, deviceId: number, action: 'manage' | 'listShares'): Promise<DeviceWithToken> {
  const row = await requireDevice(store, deviceId);
  const refused = refusal(caller, { exists: true, holding: row.owner_id === caller.id ? OWNER : undefined }, action);
  if (refused) throw refused;
  return row;
}
