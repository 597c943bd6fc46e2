import type { DeviceRecord } from '../../devices/access.ts';

export interface DeviceDirectoryOptions {
  /** The devices module's lookup. */
  lookup(uniqueId: string): Promise<DeviceRecord | undefined>;
  /** How long a known device is served from memory before it is read again (in the background). */
  ttlMs: number;
  /** Known devices held at most; beyond it the one asked for least recently goes. */
  maxEntries: number;
  now?: () => number;
}

interface Entry {
  /** Undefined while the first read is in flight. */
  record: DeviceRecord | undefined;
  fetchedAt: number;
  /** A read in flight. */
  pending: Promise<DeviceRecord | undefined> | undefined;
}

/**
 * Devices by uniqueId for ingestion, which asks on every connection and every HTTP report. A known
 * device past its TTL is still answered from memory while a fresh read runs in the background, so a
 * busy device never waits for the database; changes (disabled, attributes) are seen within the TTL.
 *
 * "No such device" is never remembered: a device created a moment after its id was refused is found
 * on its next try, on this instance or any other. Concurrent asks for one id share one read, and
 * only ids that exist stay in memory, at most `maxEntries` of them, so ids made up by a sender take
 * no memory beyond their reads in flight.
 */
export class DeviceDirectory {
  readonly #options: DeviceDirectoryOptions;
  readonly #now: () => number;
  /** In order of last use, least recent first (a Map keeps insertion order). */
  readonly #entries = new Map<string, Entry>();

  constructor(options: DeviceDirectoryOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** Ids held: known devices and reads in flight. */
  get size(): number {
    return this.#entries.size;
  }

  async find(uniqueId: string): Promise<DeviceRecord | undefined> {
    const entry = this.#entries.get(uniqueId);
    if (!entry?.record) return this.#read(uniqueId);
    this.#entries.delete(uniqueId);
    this.#entries.set(uniqueId, entry);
    if (this.#now() - entry.fetchedAt >= this.#options.ttlMs) {
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
        if (this.#entries.get(uniqueId)?.pending === pending) this.#settle(uniqueId, record);
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
    if (entry) {
      entry.pending = pending;
    } else {
      this.#entries.set(uniqueId, { record: undefined, fetchedAt: Number.NEGATIVE_INFINITY, pending });
      this.#evict();
    }
    return pending;
  }

  #settle(uniqueId: string, record: DeviceRecord | undefined): void {
    this.#entries.delete(uniqueId);
    if (record) this.#entries.set(uniqueId, { record, fetchedAt: this.#now(), pending: undefined });
  }

  /** Drops the least recently used known devices beyond the limit (reads in flight stay: they end by themselves). */
  #evict(): void {
    for (const [uniqueId, entry] of this.#entries) {
      if (this.#entries.size <= this.#options.maxEntries) return;
      if (entry.record) this.#entries.delete(uniqueId);
    }
  }

  /** The device changed: its next ask reads it again (a read in flight may predate the change and is not kept). */
  forget(uniqueId: string): void {
    this.#entries.delete(uniqueId);
  }

  /** The device was deleted: nothing about it is served from memory any more. */
  forgetDevice(deviceId: number): void {
    for (const [uniqueId, entry] of this.#entries) {
      if (entry.record?.id === deviceId) this.#entries.delete(uniqueId);
    }
  }
}
