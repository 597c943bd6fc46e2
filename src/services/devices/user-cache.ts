/**
 * How long an entry lives at most. Change events drop entries at once; this only bounds what a
 * lost event leaves behind (Redis pub/sub drops messages while a connection is down).
 */
const MISSED_EVENT_TTL_MS = 60_000;

interface Entry<T> {
  value: T;
  deviceIds: number[];
  until: number;
}

export interface CachedChange {
  userIds: readonly number[];
  deviceIds: readonly number[];
}

/**
 * What the database answered about one user's devices, kept in memory until a write changes it.
 *
 * Why this is exact without versions in the database:
 * - every write names, once it has committed, the users it may change (a new owner, a sharee) and
 *   the devices it changed (see DeviceAccessChanged); the bus brings that to every process;
 * - each entry knows the devices it contains, so a changed device drops exactly the entries of the
 *   users who see it (owner and sharees alike) without asking the database who they are; a user who
 *   does not see the device yet is named by the write that makes them see it;
 * - a load during which any change arrived is answered but not kept: it may have read the rows
 *   before that write committed.
 *
 * Bounded by the devices its entries hold: beyond `maxDevices` the oldest entries go first.
 */
export class PerUserCache<T> {
  private readonly entries = new Map<number, Entry<T>>();
  private readonly usersByDevice = new Map<number, Set<number>>();
  private readonly deviceIdsOf: (value: T) => number[];
  private readonly maxDevices: number;
  /** Devices held, counting an entry without devices as one. */
  private held = 0;
  private generation = 0;

  constructor(deviceIdsOf: (value: T) => number[], maxDevices: number) {
    this.deviceIdsOf = deviceIdsOf;
    this.maxDevices = maxDevices;
  }

  async get(userId: number, load: () => Promise<T>): Promise<T> {
    const entry = this.entries.get(userId);
    if (entry && entry.until > Date.now()) return entry.value;
    const generation = this.generation;
    const value = await load();
    if (generation === this.generation) this.remember(userId, value);
    return value;
  }

  forget(change: CachedChange): void {
    this.generation += 1;
    for (const userId of change.userIds) this.drop(userId);
    for (const deviceId of change.deviceIds) {
      for (const userId of [...(this.usersByDevice.get(deviceId) ?? [])]) this.drop(userId);
    }
  }

  private remember(userId: number, value: T): void {
    this.drop(userId);
    const deviceIds = this.deviceIdsOf(value);
    const weight = Math.max(deviceIds.length, 1);
    if (weight > this.maxDevices) return;
    while (this.held + weight > this.maxDevices) this.drop(this.entries.keys().next().value as number);
    this.entries.set(userId, { value, deviceIds, until: Date.now() + MISSED_EVENT_TTL_MS });
    this.held += weight;
    for (const deviceId of deviceIds) {
      let users = this.usersByDevice.get(deviceId);
      if (!users) this.usersByDevice.set(deviceId, (users = new Set()));
      users.add(userId);
    }
  }

  private drop(userId: number): void {
    const entry = this.entries.get(userId);
    if (!entry) return;
    this.entries.delete(userId);
    this.held -= Math.max(entry.deviceIds.length, 1);
    for (const deviceId of entry.deviceIds) {
      const users = this.usersByDevice.get(deviceId);
      users?.delete(userId);
      if (users?.size === 0) this.usersByDevice.delete(deviceId);
    }
  }
}
