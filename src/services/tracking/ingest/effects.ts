import type { FastifyBaseLogger } from 'fastify';
import type { EventBus } from '../../../platform/bus.ts';
import type { DeviceAccessApi, DeviceStatus, DeviceStatusChange } from '../../devices/access.ts';
import type { NewEvent } from '../api.ts';
import type { LiveEvent, LivePosition } from '../domain-events.ts';
import { processPosition, processStatus } from '../engine/index.ts';
import type { EngineResult, EngineSettings, StoredPosition } from '../engine/index.ts';
import { ThrottledWriter } from '../throttled-writer.ts';
import type { Clock } from '../throttled-writer.ts';
import { deviceContext } from './device-slot.ts';
import type { DeviceSlot, StoredDelivery } from './device-slot.ts';
import type { GeofenceLimits } from './geofence-limits.ts';
import { liveEvent } from './rows.ts';

export interface DeviceEffectsOptions {
  storeEvents(batch: NewEvent[]): Promise<number[]>;
  devices: Pick<DeviceAccessApi, 'updateStatuses'>;
  geofences: GeofenceLimits;
  bus: EventBus;
  log: FastifyBaseLogger;
  settings: EngineSettings;
  clock: Clock;
  /** Least time between two writes of the status changes no message carries (changes in between are merged). */
  deviceWriteIntervalMs: number;
  /** The device's slot; undefined once the device was deleted. */
  slotOf(deviceId: number): DeviceSlot | undefined;
  /** Hears of the positions each round stored (in order or not): the reports' segmentation. */
  positionsStored?(positions: readonly StoredPosition[]): void;
}

/**
 * What follows the durable write, off the acknowledgement path: the event engine over each stored
 * position in order per device, the events it raises stored and published, and the devices'
 * fields. Those of a written batch go at once (the acknowledgement waits for them); the status
 * changes no message carries (a connection closed, a timeout) go merged, at most once per
 * interval. The engine state is only ever replaced synchronously, so status changes made on
 * arrival, on disconnection and by the sweep interleave safely with the rounds.
 */
export class DeviceEffects {
  readonly #options: DeviceEffectsOptions;
  #storedDeliveries: StoredDelivery[] = [];
  #pendingEvents: NewEvent[] = [];
  readonly #pendingUpdates = new Map<number, DeviceStatusChange>();
  /** Device field writes, one after the other: a later change is never overtaken by an earlier one. */
  #deviceWrites: Promise<void> = Promise.resolve();
  readonly #statusWriter: ThrottledWriter;
  #effects: Promise<void> | undefined;
  #round: Promise<void> | undefined;
  /** Live updates on their way to the bus. */
  readonly #publishing = new Set<Promise<void>>();

  constructor(options: DeviceEffectsOptions) {
    this.#options = options;
    this.#statusWriter = new ThrottledWriter({
      intervalMs: options.deviceWriteIntervalMs,
      clock: options.clock,
      pending: () => this.#pendingUpdates.size > 0,
      write: () => {
        if (this.#pendingUpdates.size === 0) return undefined;
        const updates = [...this.#pendingUpdates.values()];
        this.#pendingUpdates.clear();
        return this.writeDeviceFields(updates);
      },
    });
  }

  applyStatus(slot: DeviceSlot, status: DeviceStatus, time: number): void {
    this.applyResult(slot, processStatus(slot.engine, status, time));
  }

  /** Takes the engine's new state; its events and any status change wait for the next round. */
  applyResult(slot: DeviceSlot, result: EngineResult): void {
    if (result.state.status !== slot.engine.status) this.update(slot.id).status = result.state.status;
    slot.engine = result.state;
    for (const event of result.events) this.#pendingEvents.push(event);
  }

  /** The device's fields waiting to be written, to change or add to. */
  update(deviceId: number): DeviceStatusChange {
    let update = this.#pendingUpdates.get(deviceId);
    if (!update) {
      update = { deviceId };
      this.#pendingUpdates.set(deviceId, update);
    }
    return update;
  }

  /** Takes the device's waiting fields out, to be written with its batch. */
  takeUpdate(deviceId: number): DeviceStatusChange | undefined {
    const update = this.#pendingUpdates.get(deviceId);
    this.#pendingUpdates.delete(deviceId);
    return update;
  }

  /**
   * Writes device fields after every write of them before (see #deviceWrites). A failure is logged
   * and the changes wait for the next round: the positions are durable whatever happens here.
   * Never rejects.
   */
  writeDeviceFields(changes: DeviceStatusChange[]): Promise<void> {
    // Nothing of its own, but an earlier write may carry fields a caller waits for (the status
    // writer can take a batch's fields before the batch is written): it is waited for too.
    if (changes.length === 0) return this.#deviceWrites;
    const written = this.#deviceWrites.then(async () => {
      try {
        await this.#options.devices.updateStatuses(changes);
      } catch (error) {
        this.#options.log.error({ err: error, count: changes.length }, 'ingest: device statuses could not be written; trying again');
        for (const change of changes) {
          if (!this.#options.slotOf(change.deviceId)) continue;
          // What changed since is newer and stays.
          this.#pendingUpdates.set(change.deviceId, { ...change, ...this.#pendingUpdates.get(change.deviceId) });
        }
      }
    });
    this.#deviceWrites = written;
    return written;
  }

  /** A write committed: its positions go to the engine, and, once `acknowledged`, to live updates. */
  stored(deliveries: StoredDelivery[], live: LivePosition[], acknowledged: Promise<void>): void {
    for (const delivery of deliveries) this.#storedDeliveries.push(delivery);
    // After the acknowledgements, which the callers write as soon as the fields are written.
    if (live.length > 0) void acknowledged.then(() => this.#publish('tracking.positions.stored', { positions: live }, 'after-acknowledgements'));
    this.kick();
  }

  /** Runs the engine over what was stored and stores its events; the device fields follow each round. */
  kick(): void {
    if (this.#effects) return;
    if (this.#hasEffects()) this.#effects = this.#runEffects();
    else this.#statusWriter.request();
  }

  /** Resolves once the rounds have run over everything stored so far and every device field is written. */
  async settled(): Promise<void> {
    await this.#deviceWrites;
    this.kick();
    while (this.#effects) await this.#effects;
    await this.#statusWriter.flush();
    await Promise.all(this.#publishing);
  }

  /** Drops what waits for the deleted device; resolves once the round and the field writes under way have ended. */
  forget(deviceId: number): Promise<unknown> {
    this.#pendingUpdates.delete(deviceId);
    this.#pendingEvents = this.#pendingEvents.filter((event) => event.deviceId !== deviceId);
    return Promise.all([this.#round, this.#deviceWrites]);
  }

  /** No more timed writes (settled() still writes everything). */
  stop(): void {
    this.#statusWriter.stop();
  }

  #hasEffects(): boolean {
    return this.#storedDeliveries.length > 0 || this.#pendingEvents.length > 0;
  }

  async #runEffects(): Promise<void> {
    // On a later turn of the event loop: the caller stores the promise first, and the rounds never
    // run back to back with the writes from within callbacks (see GroupCommit).
    await new Promise((resolve) => setImmediate(resolve));
    try {
      while (this.#hasEffects()) {
        this.#round = this.#effectsRound().catch((error: unknown) => {
          this.#options.log.error({ err: error }, 'ingest: the event engine failed on a batch; its events are lost');
        });
        await this.#round;
        this.#statusWriter.request();
        // As between writes: I/O first, and the next round takes what arrived meanwhile.
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      this.#effects = undefined;
      this.#round = undefined;
    }
  }

  async #effectsRound(): Promise<void> {
    const deliveries = this.#storedDeliveries;
    this.#storedDeliveries = [];
    this.#options.positionsStored?.(deliveries.flatMap((delivery) => delivery.positions.filter((position) => position.id !== null)));
    for (const delivery of deliveries) {
      const { slot } = delivery;
      for (const [at, position] of delivery.positions.entries()) {
        if (!delivery.inOrder[at] || this.#options.slotOf(slot.id) !== slot) continue;
        const geofences = position.valid
          ? await this.#options.geofences.hits(slot.record.ownerId, { lat: position.latitude, lon: position.longitude })
          : slot.engine.geofenceIds.map((id) => ({ id }));
        // Read after the await: status changes made meanwhile are part of the state.
        this.applyResult(slot, processPosition(slot.engine, position, { ...deviceContext(slot, this.#options.settings), geofences }));
      }
    }
    const events = this.#pendingEvents;
    this.#pendingEvents = [];
    try {
      if (events.length > 0) {
        const ids = await this.#options.storeEvents(events);
        this.#publish('tracking.events.created', { events: events.map((event, index) => liveEvent(event, ids[index] as number)) });
      }
    } catch (error) {
      this.#options.log.error({ err: error, count: events.length }, 'ingest: events could not be stored');
    }
  }

  #publish<T extends 'tracking.positions.stored' | 'tracking.events.created'>(
    topic: T,
    payload: T extends 'tracking.positions.stored' ? { positions: LivePosition[] } : { events: LiveEvent[] },
    when: 'now' | 'after-acknowledgements' = 'now',
  ): void {
    const start = when === 'now' ? Promise.resolve() : new Promise<void>((resolve) => setImmediate(resolve));
    const publishing = start
      .then(() => this.#options.bus.publish(topic, payload as never))
      .catch((error: unknown) => {
        this.#options.log.warn({ err: error, topic }, 'ingest: a live update could not be published');
      })
      .finally(() => this.#publishing.delete(publishing));
    this.#publishing.add(publishing);
  }
}
