import type { FastifyBaseLogger } from 'fastify';
import type { EventBus } from '../../../platform/bus.ts';
import type { DeviceAccessApi, DeviceRecord, DeviceStatusChange } from '../../devices/access.ts';
import type { NewEvent, NewPosition } from '../api.ts';
import type { LivePosition } from '../domain-events.ts';
import { checkInactivity, checkStatusTimeout, initialDeviceState } from '../engine/index.ts';
import type { DeviceContext, EngineSettings, StoredPosition } from '../engine/index.ts';
import { positionJson } from '../positions/formats.ts';
import type { PositionRow } from '../positions/repository.ts';
import type { StoredPositions } from '../positions/service.ts';
import type { DecodedMessage } from '../protocols/types.ts';
import { systemClock } from '../throttled-writer.ts';
import type { Clock } from '../throttled-writer.ts';
import { DeviceDirectory } from './device-directory.ts';
import { deviceContext } from './device-slot.ts';
import type { DeviceSlot, StoredDelivery } from './device-slot.ts';
import { DeviceEffects } from './effects.ts';
import { seedFromLatest } from './engine-seed.ts';
import type { GeofenceLimits } from './geofence-limits.ts';
import { GroupCommit } from './group-commit.ts';
import { fromDecoded, mergedStatus, storedFromRow } from './rows.ts';
import { DeviceRefusedError } from './sink.ts';
import type { Accepted, IngestDevice, IngestSink } from './sink.ts';

/** What the pipeline needs of the tracking module's storage. */
export interface IngestStorage {
  /** One transaction; the latest position of each device moves unless a newer fix is stored. */
  storePositions(batch: NewPosition[]): Promise<StoredPositions>;
  storeEvents(batch: NewEvent[]): Promise<number[]>;
  latestPosition(deviceId: number): Promise<PositionRow | undefined>;
  /** Devices that have a latest position: those whose stored status may need to time out after a restart. */
  devicesWithPositions(): Promise<number[]>;
}

export interface IngestPipelineOptions {
  storage: IngestStorage;
  devices: Pick<DeviceAccessApi, 'findByUniqueId' | 'getDevices' | 'updateStatuses'>;
  geofences: GeofenceLimits;
  bus: EventBus;
  log: FastifyBaseLogger;
  settings: EngineSettings;
  /** Seconds without a message before an online device becomes unknown. */
  statusTimeout: number;
  batchSize: number;
  batchDelayMs: number;
  /** How long a device record (disabled, attributes, owner) is trusted before it is read again. */
  deviceTtlMs?: number;
  /** Least time between two writes of the devices' status, lastUpdate and positionId (changes in between are merged). */
  deviceWriteIntervalMs?: number;
  /** The system's unless a test passes its own. */
  clock?: Clock;
  /** Hears, off the acknowledgement path, of every position stored: the reports' segmentation. */
  positionsStored?(positions: readonly StoredPosition[]): void;
}

/** One accepted message on its way to storage. */
interface Delivery {
  slot: DeviceSlot;
  protocol: string;
  receivedAt: number;
  message: DecodedMessage;
  /** Set by the write: the device fields of its batch are written (never rejects). */
  fieldsWritten?: Promise<void>;
  /** Set by the write: its status reports that had no fix to be placed at. */
  withoutFix?: number;
}

/**
 * One of a delivery's reports as the write places it: a row to store, in order (moves the latest)
 * or not, or a status report with no fix before it, which is not stored and only the engine reads.
 */
interface PlacedReport {
  position: NewPosition;
  inOrder: boolean;
  stored: boolean;
}

interface PlacedDelivery {
  slot: DeviceSlot;
  reports: PlacedReport[];
}

const DEFAULT_DEVICE_TTL_MS = 5_000;
/** Status changes without a message (disconnection, timeout) are written at most once a second, merged. */
const DEFAULT_DEVICE_WRITE_INTERVAL_MS = 1_000;
/** Device records held in memory at most (the least recently asked for go first). */
const MAX_CACHED_DEVICES = 100_000;
/** The status sweep runs at least this often, and often enough to notice a timeout within a quarter of it. */
const MAX_SWEEP_INTERVAL_MS = 5_000;

/**
 * The ingestion pipeline behind the protocol listeners (DESIGN §1): device lookup → per-device
 * ordering → group-committed durable write, then the devices' status, lastUpdate and positionId of
 * the batch (so a read after the acknowledgement sees them, DESIGN §5.4) → acknowledgement → live
 * positions; then, off the acknowledgement path and strictly in order per device, the event engine
 * and the events (DeviceEffects). This class holds arrival and the durable write.
 *
 * Ordering: a device's messages enter the write queue in the order accept() is called (the
 * connection handler calls it frame by frame), the queue is written first in, first out, and the
 * engine runs over each write in turn. Nothing in memory runs ahead of the database: a device's last
 * fix moves only once its write has committed, so a write that fails leaves no trace.
 */
export class IngestPipeline implements IngestSink {
  readonly #options: IngestPipelineOptions;
  readonly #now: () => number;
  readonly #directory: DeviceDirectory;
  readonly #deviceTtlMs: number;
  readonly #writer: GroupCommit<Delivery>;
  readonly #slots = new Map<number, DeviceSlot>();
  /** The last write handed to the queue, settled: stop() and deletions wait for it. */
  #lastWrite: Promise<void> = Promise.resolve();
  readonly #effects: DeviceEffects;
  #sweepTimer: NodeJS.Timeout | undefined;
  #stopping = false;

  constructor(options: IngestPipelineOptions) {
    this.#options = options;
    const clock = options.clock ?? systemClock;
    this.#now = () => clock.now();
    this.#deviceTtlMs = options.deviceTtlMs ?? DEFAULT_DEVICE_TTL_MS;
    this.#directory = new DeviceDirectory({
      lookup: (uniqueId) => options.devices.findByUniqueId(uniqueId),
      ttlMs: this.#deviceTtlMs,
      maxEntries: MAX_CACHED_DEVICES,
      now: this.#now,
    });
    this.#writer = new GroupCommit<Delivery>({
      batchSize: options.batchSize,
      delayMs: options.batchDelayMs,
      rowsOf: (delivery) => delivery.message.positions.length + delivery.message.statuses.length,
      write: (deliveries) => this.#write(deliveries),
    });
    this.#effects = new DeviceEffects({
      storeEvents: (batch) => options.storage.storeEvents(batch),
      devices: options.devices,
      geofences: options.geofences,
      bus: options.bus,
      log: options.log,
      settings: options.settings,
      clock,
      deviceWriteIntervalMs: options.deviceWriteIntervalMs ?? DEFAULT_DEVICE_WRITE_INTERVAL_MS,
      slotOf: (deviceId) => this.#slots.get(deviceId),
      positionsStored: options.positionsStored,
    });
  }

  // --- IngestSink ------------------------------------------------------------------------------------------------

  async identify(uniqueId: string): Promise<IngestDevice | undefined> {
    let record = await this.#directory.find(uniqueId);
    // A refusal is never served from memory: a device re-enabled (here or on another instance) is accepted at once.
    if (record && this.#isRefused(record)) record = await this.#directory.refresh(uniqueId);
    if (!record || this.#isRefused(record)) return undefined;
    const slot = this.#slotOf(record);
    slot.refused = false;
    return { id: record.id, uniqueId: record.uniqueId };
  }

  async accept(device: IngestDevice, protocol: string, message: DecodedMessage, receivedAt: Date): Promise<Accepted> {
    const slot = this.#slots.get(device.id);
    if (!slot || slot.refused) throw new DeviceRefusedError(device.uniqueId);
    const time = receivedAt.getTime();
    this.#recheck(slot, time);
    if (!slot.loaded) await this.#load(slot);
    this.#effects.applyStatus(slot, 'online', time);
    this.#effects.update(slot.id).lastUpdate = time;
    // Even a message with nothing to store goes through the writer: its status and lastUpdate are
    // written before its acknowledgement.
    const delivery: Delivery = { slot, protocol, receivedAt: time, message };
    const written = this.#writer.add(delivery).then(() => delivery.fieldsWritten);
    this.#lastWrite = written.catch(() => undefined);
    await written;
    return { withoutFix: delivery.withoutFix ?? 0 };
  }

  connected(device: IngestDevice): void {
    const slot = this.#slots.get(device.id);
    if (slot) slot.sessions++;
  }

  disconnected(device: IngestDevice): void {
    const slot = this.#slots.get(device.id);
    if (!slot) return;
    slot.sessions = Math.max(0, slot.sessions - 1);
    // A server shutting down closes the connections itself: the devices did not go offline.
    if (slot.sessions === 0 && !this.#stopping) {
      this.#effects.applyStatus(slot, 'offline', this.#now());
      this.#effects.kick();
    }
  }

  // --- lifecycle -------------------------------------------------------------------------------------------------

  /** Starts the status sweep and picks up the devices a previous run left online. */
  async start(): Promise<void> {
    const interval = Math.min(MAX_SWEEP_INTERVAL_MS, Math.max(100, (this.#options.statusTimeout * 1000) / 4));
    this.#sweepTimer = setInterval(() => this.sweep(), interval);
    this.#sweepTimer.unref();
    try {
      await this.#resumeStatuses();
    } catch (error) {
      this.#options.log.error({ err: error }, 'ingest: the statuses left by the previous run could not be read; devices it left online stay so until they send');
    }
  }

  /**
   * Closes the listeners (through `closeListeners`), then writes what was accepted, runs the engine
   * over it and stops the sweep. The connections closed on the way do not make their devices offline.
   */
  async stop(closeListeners: () => Promise<void>): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#sweepTimer);
    await closeListeners();
    await this.#lastWrite;
    await this.#writer.drain();
    await this.settled();
    this.#effects.stop();
  }

  /**
   * Online devices silent past STATUS_TIMEOUT become unknown; devices silent past their
   * deviceInactivityStart (and period) raise deviceInactive. Runs on a timer; public for tests.
   */
  sweep(): void {
    const now = this.#now();
    for (const slot of this.#slots.values()) {
      this.#effects.applyResult(slot, checkStatusTimeout(slot.engine, now, this.#options.statusTimeout));
      this.#effects.applyResult(slot, checkInactivity(slot.engine, now, this.#context(slot)));
    }
    this.#effects.kick();
  }

  /** Resolves once everything accepted so far is stored and its events and statuses are written (tests, benchmarks). */
  async settled(): Promise<void> {
    await this.#lastWrite;
    await this.#effects.settled();
  }

  /**
   * The device was deleted: nothing more of it is accepted or processed, and the write and the
   * effects round in flight finish first, so none of its data is written after it is removed.
   */
  async forgetDevice(deviceId: number): Promise<void> {
    const slot = this.#slots.get(deviceId);
    this.#directory.forgetDevice(deviceId);
    if (!slot) return;
    slot.refused = true;
    this.#slots.delete(deviceId);
    const effectsEnded = this.#effects.forget(deviceId);
    await this.#lastWrite;
    await effectsEnded;
  }

  /**
   * The devices module changed these devices (disabled, attributes, owner): their records are read
   * again before their next message is taken, instead of within the TTL.
   */
  devicesChanged(deviceIds: readonly number[]): void {
    for (const deviceId of deviceIds) {
      const slot = this.#slots.get(deviceId);
      if (!slot) continue;
      this.#directory.forget(slot.record.uniqueId);
      slot.checkedAt = Number.NEGATIVE_INFINITY;
    }
  }

  // --- arrival ---------------------------------------------------------------------------------------------------

  #slotOf(record: DeviceRecord): DeviceSlot {
    let slot = this.#slots.get(record.id);
    if (!slot) {
      slot = {
        id: record.id,
        record,
        checkedAt: this.#now(),
        refused: false,
        last: null,
        loaded: false,
        loading: undefined,
        engine: initialDeviceState(record.id, record.status, record.lastUpdate),
        sessions: 0,
      };
      this.#slots.set(record.id, slot);
    } else if (record !== slot.record) {
      slot.record = record;
      slot.checkedAt = this.#now();
    }
    return slot;
  }

  #isRefused(record: DeviceRecord): boolean {
    return record.disabled || (record.expirationTime !== null && record.expirationTime <= this.#now());
  }

  /** A long-lived connection identifies once: its device is read again every TTL, in the background. */
  #recheck(slot: DeviceSlot, now: number): void {
    if (now - slot.checkedAt < this.#deviceTtlMs) return;
    slot.checkedAt = now;
    this.#directory.refresh(slot.record.uniqueId).then(
      (record) => {
        if (!record || record.id !== slot.id || this.#isRefused(record)) slot.refused = true;
        else slot.record = record;
      },
      (error: unknown) => this.#options.log.warn({ err: error, deviceId: slot.id }, 'ingest: could not read the device again'),
    );
  }

  /** Reads the device's latest stored position once: status reports merge into it, and the engine starts from it. */
  #load(slot: DeviceSlot): Promise<void> {
    slot.loading ??= (async () => {
      const row = await this.#options.storage.latestPosition(slot.id);
      if (row) {
        const latest = storedFromRow(row);
        const geofenceIds = latest.valid
          ? (await this.#options.geofences.hits(slot.record.ownerId, { lat: latest.latitude, lon: latest.longitude })).map((hit) => hit.id)
          : [];
        slot.last = latest;
        slot.engine = seedFromLatest(slot.engine, latest, geofenceIds, this.#context(slot));
      }
      slot.loaded = true;
    })().catch((error: unknown) => {
      slot.loading = undefined;
      throw error;
    });
    return slot.loading;
  }

  /** False once the device was deleted. */
  #isCurrent(slot: DeviceSlot): boolean {
    return this.#slots.get(slot.id) === slot;
  }

  #context(slot: DeviceSlot): DeviceContext {
    return deviceContext(slot, this.#options.settings);
  }

  // --- the durable write -----------------------------------------------------------------------------------------

  /**
   * Each delivery's reports in queue order: decoded positions, then its status reports merged into
   * the last fix before them. A status report with no fix before it is not stored: a row at 0,0 in
   * 1970 would be a position no plausibility rule lets a device send. `last` holds each device's
   * last fix as the batch goes (starting from the stored one); the slots keep theirs until the write
   * commits.
   */
  #place(deliveries: Delivery[], last: Map<DeviceSlot, NewPosition | null>): PlacedDelivery[] {
    return deliveries.map((delivery) => {
      const { slot, protocol, receivedAt, message } = delivery;
      const placed: PlacedDelivery = { slot, reports: [] };
      let latest = last.has(slot) ? (last.get(slot) as NewPosition | null) : slot.last;
      const place = (position: NewPosition) => {
        const inOrder = latest === null || position.fixTime >= latest.fixTime;
        if (inOrder) latest = position;
        placed.reports.push({ position, inOrder, stored: true });
      };
      for (const decoded of message.positions) place(fromDecoded(slot.id, protocol, decoded, receivedAt));
      delivery.withoutFix = 0;
      for (const status of message.statuses) {
        if (latest !== null) {
          place(mergedStatus(slot.id, protocol, latest, status, receivedAt));
        } else {
          placed.reports.push({ position: mergedStatus(slot.id, protocol, null, status, receivedAt), inOrder: true, stored: false });
          delivery.withoutFix += 1;
        }
      }
      last.set(slot, latest);
      return placed;
    });
  }

  async #write(deliveries: Delivery[]): Promise<void> {
    const last = new Map<DeviceSlot, NewPosition | null>();
    const placed = this.#place(deliveries, last);
    const toStore = placed.flatMap((delivery) => delivery.reports.filter((report) => report.stored).map((report) => report.position));
    const { rows, moved } = await this.#options.storage.storePositions(toStore);
    // Durable from here: everything below is bookkeeping and must not fail the acknowledgement.
    for (const [slot, position] of last) slot.last = position;
    const live: LivePosition[] = [];
    const storedDeliveries: StoredDelivery[] = [];
    let index = 0;
    for (const delivery of placed) {
      const positions: StoredPosition[] = [];
      for (const { position, inOrder, stored } of delivery.reports) {
        if (!stored) {
          positions.push({ ...position, id: null });
          continue;
        }
        const row = rows[index++] as PositionRow;
        positions.push({ ...position, id: row.id });
        if (inOrder && this.#isCurrent(delivery.slot)) live.push({ deviceId: row.device_id, json: positionJson(row) });
      }
      if (positions.length > 0) storedDeliveries.push({ slot: delivery.slot, positions, inOrder: delivery.reports.map((report) => report.inOrder) });
    }
    // The batch's devices show what it stored before anyone is told (a read after the ACK sees it).
    const changes = new Map<number, DeviceStatusChange>();
    for (const { slot } of placed) {
      const pending = this.#effects.takeUpdate(slot.id);
      if (pending && this.#isCurrent(slot)) changes.set(slot.id, pending);
    }
    for (const entry of moved) {
      if (!this.#slots.has(entry.device_id)) continue;
      const change = changes.get(entry.device_id) ?? { deviceId: entry.device_id };
      change.positionId = entry.position_id;
      changes.set(entry.device_id, change);
    }
    // Not awaited: the next batch's positions are written meanwhile (on PostgreSQL, on another
    // connection), and each caller waits for its batch's fields before acknowledging (accept()).
    const fieldsWritten = this.#effects.writeDeviceFields([...changes.values()]);
    for (const delivery of deliveries) delivery.fieldsWritten = fieldsWritten;
    this.#effects.stored(storedDeliveries, live, fieldsWritten);
  }

  // --- restart ---------------------------------------------------------------------------------------------------

  /** Devices a previous run left online time out like any other, even if they never send again. */
  async #resumeStatuses(): Promise<void> {
    const ids = await this.#options.storage.devicesWithPositions();
    for (let start = 0; start < ids.length; start += 1000) {
      for (const record of await this.#options.devices.getDevices(ids.slice(start, start + 1000))) {
        if (record.status === 'online' && !this.#slots.has(record.id)) this.#slotOf(record);
      }
    }
  }
}
