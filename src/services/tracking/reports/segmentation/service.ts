import type { FastifyBaseLogger } from 'fastify';
import { effectiveSettings } from '../../engine/index.ts';
import type { EngineSettings } from '../../engine/index.ts';
import { storedFromRow } from '../../ingest/rows.ts';
import type { Clock } from '../../throttled-writer.ts';
import { averageKnots, compareKeys, distanceBetween, fuelBetween, hourOf, hoursBetween, initialSegmentationState, ongoingSegment, step } from './machine.ts';
import type { HourSums, Segment, SegmentationState, SegmentedPosition } from './machine.ts';
import type { DeviceOutcome, HourRow, NewStopRow, NewTripRow, PositionKey, SegmentationRepository, StoredState } from './repository.ts';

export interface SegmentationOptions {
  repository: SegmentationRepository;
  /** The attributes of these devices (their overrides of the motion rules); a device missing from the answer was deleted. */
  deviceAttributes(deviceIds: readonly number[]): Promise<Map<number, Readonly<Record<string, unknown>>>>;
  /** The deployment's settings of the motion rules: the event engine's (EVENT_DEFAULTS). */
  settings: EngineSettings;
  /** REPORTS_SEGMENTATION_DELAY: ms a device's stored positions wait to be segmented together. */
  delayMs: number;
  clock: Clock;
  log: FastifyBaseLogger;
}

/** Positions one transaction takes at most: a long catch-up (a rebuild, a restart) commits as it goes. */
const PAGE_SIZE = 2_000;
/** Devices one round writes in one transaction (their new positions in hand). */
const DEVICES_PER_TRANSACTION = 500;
/** How far before its cursor a restart looks for the late positions of a device that a crash left unsegmented. */
const LATE_WINDOW_MS = 86_400_000;
/** A failed round is tried again after this long (the positions are durable; only the rows wait). */
const RETRY_MS = 5_000;

/** What motion_states.state holds: the machine's state and the highest position id it has taken. */
interface DeviceCursorState {
  seenId: number;
  machine: SegmentationState;
}

/** Where a device's segmentation starts again: after its cursor, at an earlier position (a late one), or from scratch. */
type Restart = { kind: 'continue' } | { kind: 'from'; key: PositionKey } | { kind: 'scratch' };

/** A device's positions stored since its last round: the earliest key, and the positions themselves when this instance stored them. */
interface PendingDevice {
  earliest: PositionKey;
  positions: SegmentedPosition[];
  /** The earliest key noted without its position (a catch-up, a retry). */
  noted: PositionKey | null;
}

/**
 * Segmentation after the acknowledgement (DESIGN §5.9, docs/reports.md): the pipeline reports the positions it stored;
 * each device's segmentation catches up from its durable cursor in rounds. A device whose new positions follow the
 * cursor this instance wrote last is segmented from the positions in hand, many devices in one transaction; any other
 * (the first round after a start, a position before the cursor, another instance's cursor) reads its positions, one
 * device transaction a page. A position before the cursor rewinds the device to the checkpoint before it. Every
 * transaction holds its devices' locks and writes their trips, stops, hours, checkpoints and cursors together. A start
 * catches up the devices a previous run left behind.
 */
export class Segmentation {
  readonly #options: SegmentationOptions;
  #pending = new Map<number, PendingDevice>();
  /** The cursor this instance last wrote per device: new positions after it need no read. */
  readonly #written = new Map<number, PositionKey>();
  /**
   * Per device, the ids of positions a read took before the pipeline handed them over (stored while the read ran): their
   * hand-off brings nothing new, and taken as new it would rewind the device and read again, round after round.
   */
  readonly #takenAhead = new Map<number, Set<number>>();
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> | undefined;
  /** Deleted devices: a round under way writes nothing more for them. */
  readonly #forgotten = new Set<number>();
  #stopped = false;

  constructor(options: SegmentationOptions) {
    this.#options = options;
  }

  /** Positions committed (called off the acknowledgement path): their devices are segmented in the next round. */
  positionsStored(positions: readonly SegmentedPosition[]): void {
    for (const position of positions) this.#note(position.deviceId, { fixTime: position.fixTime, id: position.id }, position);
    if (positions.length > 0) this.#schedule(this.#options.delayMs);
  }

  /**
   * Catches up the devices a previous run (on any instance) left behind their positions: resolves once they are queued
   * for the next round (never rejects; the caller need not wait).
   */
  start(): Promise<void> {
    this.#stopped = false;
    return this.#resume().catch((error: unknown) => this.#options.log.error({ err: error }, 'reports: the segmentation could not catch up after the start'));
  }

  /** Segments what was stored so far, then takes no more rounds until start(). */
  async stop(): Promise<void> {
    await this.settled();
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#written.clear();
    this.#takenAhead.clear();
  }

  /** Resolves once every position reported so far is segmented (tests, benchmarks, stop()). */
  async settled(): Promise<void> {
    while (this.#round || this.#pending.size > 0) {
      if (!this.#round) this.#startRound();
      await this.#round;
    }
  }

  /** The device was deleted: nothing more of it is segmented; resolves once a round under way has let go of it. */
  async forgetDevice(deviceId: number): Promise<void> {
    this.#forgotten.add(deviceId);
    this.#pending.delete(deviceId);
    this.#written.delete(deviceId);
    this.#takenAhead.delete(deviceId);
    await this.#round;
  }

  /** Removes everything segmentation wrote for a deleted device (after forgetDevice). */
  removeDevice(deviceId: number): Promise<void> {
    return this.#options.repository.inDevicesTransaction([deviceId], (repository) => repository.removeDevice(deviceId));
  }

  /**
   * Recomputes devices from their positions (`npm run cli -- reports rebuild`): from the checkpoint before `from`, or from
   * their first position, through their latest. `progress` hears of each device done.
   */
  async rebuild(deviceIds: readonly number[], from: number | undefined, progress: (done: number, positions: number) => void = () => undefined): Promise<number> {
    let total = 0;
    for (const [index, deviceId] of deviceIds.entries()) {
      const attributes = await this.#options.deviceAttributes([deviceId]);
      const restart: Restart = from === undefined ? { kind: 'scratch' } : { kind: 'from', key: { fixTime: from, id: 0 } };
      total += await this.#segmentDevice(deviceId, attributes.get(deviceId) ?? {}, restart);
      progress(index + 1, total);
    }
    return total;
  }

  /** The devices to rebuild when none is named: those that have positions or were segmented. */
  async devicesToRebuild(): Promise<number[]> {
    const ids = new Set([...(await this.#options.repository.devicesBehind()), ...(await this.#options.repository.devicesWithState())]);
    return [...ids].sort((a, b) => a - b);
  }

  #note(deviceId: number, key: PositionKey, position?: SegmentedPosition): void {
    if (this.#forgotten.has(deviceId)) return;
    const pending = this.#pending.get(deviceId);
    if (!pending) {
      this.#pending.set(deviceId, { earliest: key, positions: position ? [position] : [], noted: position ? null : key });
      return;
    }
    if (compareKeys(key, pending.earliest) < 0) pending.earliest = key;
    if (position) pending.positions.push(position);
    else if (pending.noted === null || compareKeys(key, pending.noted) < 0) pending.noted = key;
  }

  /** The device's pending positions but those a read took already (undefined: nothing left to segment). */
  #withoutTakenAhead(deviceId: number, device: PendingDevice): PendingDevice | undefined {
    const taken = this.#takenAhead.get(deviceId);
    if (!taken) return device;
    const positions = device.positions.filter((position) => !taken.delete(position.id));
    if (taken.size === 0) this.#takenAhead.delete(deviceId);
    if (positions.length === device.positions.length) return device;
    const keys: PositionKey[] = positions.map(({ fixTime, id }) => ({ fixTime, id }));
    if (device.noted) keys.push(device.noted);
    if (keys.length === 0) return undefined;
    return { earliest: keys.reduce((earliest, key) => (compareKeys(key, earliest) < 0 ? key : earliest)), positions, noted: device.noted };
  }

  /** Remembers the positions a read took that were not handed over yet (at most a page's worth: past that, a rewind is the fallback). */
  #noteTakenAhead(deviceId: number, taken: Set<number>, handedOver: readonly SegmentedPosition[]): void {
    for (const position of handedOver) taken.delete(position.id);
    const earlier = this.#takenAhead.get(deviceId);
    if (earlier) for (const id of earlier) taken.add(id);
    if (taken.size === 0 || taken.size > PAGE_SIZE) this.#takenAhead.delete(deviceId);
    else this.#takenAhead.set(deviceId, taken);
  }

  #schedule(delayMs: number): void {
    if (this.#timer !== undefined || this.#round || this.#stopped) return;
    this.#timer = setTimeout(() => this.#startRound(), delayMs);
    this.#timer.unref();
  }

  #startRound(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#round = this.#runRound().finally(() => {
      this.#round = undefined;
      if (this.#pending.size > 0) this.#schedule(this.#options.delayMs);
    });
  }

  async #runRound(): Promise<void> {
    const pending = new Map<number, PendingDevice>();
    for (const [deviceId, device] of this.#pending) {
      const left = this.#withoutTakenAhead(deviceId, device);
      if (left) pending.set(deviceId, left);
    }
    this.#pending = new Map();
    if (pending.size === 0) return;
    let attributes: Map<number, Readonly<Record<string, unknown>>>;
    try {
      attributes = await this.#options.deviceAttributes([...pending.keys()]);
    } catch (error) {
      this.#options.log.warn({ err: error }, 'reports: the devices to segment could not be read; trying again');
      this.#retry(pending);
      return;
    }
    const inHand: number[] = [];
    const toRead: number[] = [];
    for (const [deviceId, device] of pending) {
      if (attributes.get(deviceId) === undefined || this.#forgotten.has(deviceId)) continue;
      const written = this.#written.get(deviceId);
      const follows = written !== undefined && device.positions.length > 0 && compareKeys(device.earliest, written) > 0;
      (follows && isOrdered(device.positions) ? inHand : toRead).push(deviceId);
    }
    for (let start = 0; start < inHand.length; start += DEVICES_PER_TRANSACTION) {
      const chunk = inHand.slice(start, start + DEVICES_PER_TRANSACTION);
      try {
        toRead.push(...(await this.#segmentInHand(chunk, pending, attributes)));
      } catch (error) {
        this.#options.log.error({ err: error, devices: chunk.length }, 'reports: devices could not be segmented; trying again');
        for (const deviceId of chunk) this.#written.delete(deviceId);
        this.#retry(new Map(chunk.map((deviceId) => [deviceId, pending.get(deviceId) as PendingDevice])));
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    for (const deviceId of toRead) {
      const device = pending.get(deviceId) as PendingDevice;
      try {
        const taken = new Set<number>();
        await this.#segmentDevice(deviceId, attributes.get(deviceId) ?? {}, { kind: 'from', key: device.earliest }, taken);
        this.#noteTakenAhead(deviceId, taken, device.positions);
      } catch (error) {
        this.#options.log.error({ err: error, deviceId }, 'reports: a device could not be segmented; trying again');
        this.#retry(new Map([[deviceId, device]]));
      }
      // Between devices, the sockets and the writes of ingestion go first.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Devices whose new positions follow their cursor, from the positions in hand, in one transaction; answers those whose cursor moved meanwhile (another instance), to be read. */
  async #segmentInHand(deviceIds: number[], pending: Map<number, PendingDevice>, attributes: Map<number, Readonly<Record<string, unknown>>>): Promise<number[]> {
    const moved: number[] = [];
    const outcomes = await this.#options.repository.inDevicesTransaction(deviceIds, async (repository) => {
      const states = await repository.statesOf(deviceIds);
      const made: DeviceOutcome[] = [];
      for (const deviceId of deviceIds) {
        const stored = states.get(deviceId);
        const written = this.#written.get(deviceId);
        if (!stored || !written || compareKeys(stored.cursor, written) !== 0 || this.#forgotten.has(deviceId)) {
          moved.push(deviceId);
          continue;
        }
        const settings = effectiveSettings({ deviceAttributes: attributes.get(deviceId) ?? {}, settings: this.#options.settings });
        const state = JSON.parse(stored.state) as DeviceCursorState;
        made.push(advance(deviceId, state, ongoingStart(state.machine), (pending.get(deviceId) as PendingDevice).positions, settings));
      }
      await repository.write(made, this.#options.clock.now());
      return made;
    });
    for (const outcome of outcomes) this.#written.set(outcome.deviceId, outcome.cursor);
    return moved;
  }

  #retry(failed: Map<number, PendingDevice>): void {
    for (const [deviceId, device] of failed) this.#note(deviceId, device.earliest);
    setTimeout(() => this.#schedule(0), RETRY_MS).unref();
  }

  async #resume(): Promise<void> {
    const { repository } = this.#options;
    const behind = await repository.devicesBehind();
    const late = new Map<number, PositionKey>();
    for (const deviceId of await repository.devicesWithState()) {
      const stored = await repository.stateOf(deviceId);
      if (!stored) continue;
      const { seenId } = JSON.parse(stored.state) as DeviceCursorState;
      const key = await repository.earliestLate(deviceId, stored.cursor.fixTime - LATE_WINDOW_MS, stored.cursor, seenId);
      if (key) late.set(deviceId, key);
    }
    for (const deviceId of behind) if (!late.has(deviceId)) late.set(deviceId, { fixTime: Number.MAX_SAFE_INTEGER, id: 0 });
    if (late.size === 0) return;
    this.#options.log.info({ devices: late.size }, 'reports: catching up the segmentation of devices behind their positions');
    for (const [deviceId, key] of late) this.#note(deviceId, key);
    this.#schedule(this.#options.delayMs);
  }

  /**
   * Segments one device from its stored positions page by page: its first page restarts as `restart` says, the next ones
   * continue. Answers the positions taken; `takenIds` hears the ids of those past the device's previous highest.
   */
  async #segmentDevice(deviceId: number, deviceAttributes: Readonly<Record<string, unknown>>, restart: Restart, takenIds?: Set<number>): Promise<number> {
    const settings = effectiveSettings({ deviceAttributes, settings: this.#options.settings });
    let taken = 0;
    let next = restart;
    for (;;) {
      const page = await this.#options.repository.inDevicesTransaction([deviceId], (repository) => this.#segmentPage(repository, deviceId, settings, next, takenIds));
      taken += page;
      if (page < PAGE_SIZE || this.#forgotten.has(deviceId)) return taken;
      next = { kind: 'continue' };
    }
  }

  async #segmentPage(repository: SegmentationRepository, deviceId: number, settings: EngineSettings, restart: Restart, taken?: Set<number>): Promise<number> {
    const stored = await repository.stateOf(deviceId);
    const cursorState = stored && (JSON.parse(stored.state) as DeviceCursorState);
    let state: DeviceCursorState;
    let from: PositionKey | null;
    let inclusive = false;
    let replacesOngoingFrom: number | null = null;
    const rewindTo = restart.kind === 'from' && stored && compareKeys(restart.key, stored.cursor) <= 0 ? restart.key : null;
    if (!stored || !cursorState || restart.kind === 'scratch') {
      state = { seenId: 0, machine: initialSegmentationState() };
      from = null;
      await repository.forgetFrom(deviceId, null, null, null);
    } else if (rewindTo !== null) {
      const checkpoint = await repository.checkpointAtOrBefore(deviceId, rewindTo);
      state = { seenId: cursorState.seenId, machine: checkpoint ? (JSON.parse(checkpoint.state) as SegmentationState) : initialSegmentationState() };
      from = checkpoint?.cursor ?? null;
      inclusive = true;
      const open = state.machine.open;
      await repository.forgetFrom(
        deviceId,
        open && { fixTime: open.start.time, id: open.start.positionId },
        checkpoint ? hourOf(checkpoint.cursor.fixTime) : null,
        checkpoint?.cursor ?? null,
      );
    } else {
      state = cursorState;
      from = stored.cursor;
      replacesOngoingFrom = ongoingStart(state.machine);
    }

    const rows = await repository.positionsFrom(deviceId, from, inclusive, PAGE_SIZE);
    const seenBefore = cursorState?.seenId ?? 0;
    if (taken) for (const row of rows) if (Number(row.id) > seenBefore) taken.add(Number(row.id));
    if (rows.length > 0) {
      const outcome = advance(deviceId, state, replacesOngoingFrom, rows.map((row) => storedFromRow(row) as SegmentedPosition), settings);
      await repository.write([outcome], this.#options.clock.now());
      this.#written.set(deviceId, outcome.cursor);
    } else if (stored) {
      this.#written.set(deviceId, stored.cursor);
    }
    return rows.length;
  }
}

/** Whether the positions are in strictly ascending (fixTime, id) order. */
function isOrdered(positions: readonly SegmentedPosition[]): boolean {
  for (let index = 1; index < positions.length; index++) {
    if (compareKeys(positions[index - 1] as SegmentedPosition, positions[index] as SegmentedPosition) >= 0) return false;
  }
  return true;
}

/** The start time of the trip or stop in progress as written (none when it has no length yet). */
function ongoingStart(machine: SegmentationState): number | null {
  return ongoingSegment(machine)?.start.time ?? null;
}

/** Runs a device's positions (in order, after its state) through the machine: the rows, hours, checkpoints and cursor to write. */
function advance(deviceId: number, state: DeviceCursorState, replacesOngoingFrom: number | null, positions: readonly SegmentedPosition[], settings: EngineSettings): DeviceOutcome {
  let machine = state.machine;
  let seenId = state.seenId;
  const closed: Segment[] = [];
  const hours: HourSums[] = [];
  const checkpoints: StoredState[] = [];
  for (const position of positions) {
    const result = step(machine, position, settings);
    if (result.hourBegun) {
      checkpoints.push({ cursor: { fixTime: position.fixTime, id: position.id }, state: JSON.stringify(machine) });
      if (machine.hour !== null) hours.push(machine.hour);
    }
    closed.push(...result.closed);
    machine = result.state;
    seenId = Math.max(seenId, position.id);
  }
  if (machine.hour !== null) hours.push(machine.hour);
  const ongoing = ongoingSegment(machine);
  const segments = ongoing ? [...closed, ongoing] : closed;
  const last = machine.last as NonNullable<SegmentationState['last']>;
  return {
    deviceId,
    replacesOngoingFrom,
    trips: segments.filter((segment) => segment.kind === 'trip').map((segment) => tripRow(deviceId, segment)),
    stops: segments.filter((segment) => segment.kind === 'stop').map((segment) => stopRow(deviceId, segment)),
    hours: hours.map((hour) => hourRow(deviceId, hour)),
    checkpoints,
    cursor: { fixTime: last.time, id: last.positionId },
    state: JSON.stringify({ seenId, machine } satisfies DeviceCursorState),
  };
}

export function tripRow(deviceId: number, { start, end, maxSpeed, ongoing }: Segment): NewTripRow {
  const { distance, startOdometer, endOdometer } = distanceBetween(start, end);
  return {
    device_id: deviceId,
    start_time: start.time,
    end_time: end.time,
    start_position_id: start.positionId,
    end_position_id: end.positionId,
    start_lat: start.lat,
    start_lon: start.lon,
    end_lat: end.lat,
    end_lon: end.lon,
    distance,
    average_speed: averageKnots(distance, end.time - start.time),
    max_speed: maxSpeed,
    start_odometer: startOdometer,
    end_odometer: endOdometer,
    spent_fuel: fuelBetween(start, end),
    driver_unique_id: end.driverUniqueId,
    ongoing: ongoing ? 1 : 0,
  };
}

export function stopRow(deviceId: number, { start, end, ongoing }: Segment): NewStopRow {
  return {
    device_id: deviceId,
    start_time: start.time,
    end_time: end.time,
    position_id: start.positionId,
    lat: start.lat,
    lon: start.lon,
    engine_hours: hoursBetween(start, end),
    spent_fuel: fuelBetween(start, end),
    ongoing: ongoing ? 1 : 0,
  };
}

function hourRow(deviceId: number, hour: HourSums): HourRow {
  return {
    device_id: deviceId,
    hour_start: hour.hourStart,
    first_time: hour.firstTime,
    last_time: hour.lastTime,
    positions: hour.positions,
    distance: hour.distance,
    max_speed: hour.maxSpeed,
    speed_sum: hour.speedSum,
    start_odometer: hour.startOdometer,
    end_odometer: hour.endOdometer,
    engine_hours: Math.round(hour.engineHours),
    spent_fuel: hour.spentFuel,
  };
}
