import type { DeviceRecord } from '../../devices/access.ts';

export interface DeviceDirectoryOptions {
  /** The devices module's lookup. */
  lookup(uniqueId: string): Promise<DeviceRecord | undefined>;
  /** How long a known device is served from memory before it is read again (in the background). */
  knownTtlMs: number;
  /** How long "no such device" is remembered: an unknown tracker retrying does not reach the database each time. */
  unknownTtlMs: number;
  now?: () => number;
}

interface Entry {
  record: DeviceRecord | undefined;
  fetchedAt: number;
  /** A read in flight. */
  pending: Promise<DeviceRecord | undefined> | undefined;
}

/**
 * Devices by uniqueId for ingestion, which asks on every connection and every HTTP report. A known
 * device past its TTL is still answered from memory while a fresh read runs in the background, so a
 * busy device never waits for the database; changes (disabled, attributes) are seen within the TTL.
 */
export class DeviceDirectory {
  readonly #options: DeviceDirectoryOptions;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();

  constructor(options: DeviceDirectoryOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  async find(uniqueId: string): Promise<DeviceRecord | undefined> {
    const entry = this.#entries.get(uniqueId);
    if (!entry) return this.#read(uniqueId);
    const age = this.#now() - entry.fetchedAt;
    if (entry.record === undefined) return age < this.#options.unknownTtlMs ? undefined : this.#read(uniqueId);
    if (age >= this.#options.knownTtlMs) {
      // A failed background read keeps the last known record until the next try.
      this.#read(uniqueId).catch(() => undefined);
    }
    return entry.record;
  }

  /** Reads the device now, bypassing the cache (once, however many ask at the same time). */
  refresh(uniqueId: string): Promise<DeviceRecord | undefined> {
    return this.#read(uniqueId);
  }

  #read(uniqueId: string): Promise<DeviceRecord | undefined> {
    const entry = this.#entries.get(uniqueId);
    if (entry?.pending) return entry.pending;
    const pending = this.#options.lookup(uniqueId).then(
      (record) => {
        this.#entries.set(uniqueId, { record, fetchedAt: this.#now(), pending: undefined });
        return record;
      },
      (error: unknown) => {
        const current = this.#entries.get(uniqueId);
        if (current?.pending === pending) {
          if (current.record === undefined) this.#entries.delete(uniqueId);
          else current.pending = undefined;
        }
        throw error;
      },
    );
    if (entry) entry.pending = pending;
    else this.#entries.set(uniqueId, { record: undefined, fetchedAt: Number.NEGATIVE_INFINITY, pending });
    return pending;
  }

  /** The device was deleted: nothing about it is served from memory any more. */
  forgetDevice(deviceId: number): void {
    for (const [uniqueId, entry] of this.#entries) {
      if (entry.record?.id === deviceId) this.#entries.delete(uniqueId);
    }
  }
}
