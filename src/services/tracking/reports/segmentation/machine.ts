// The motion state machine of reports (DESIGN §5.9, docs/reports.md, "Segmentation"): a device's positions in
// (fixTime, id) order in, trips, stops and hourly sums out. Pure: no I/O, no clock. The motion rules are the event
// engine's (engine/motion.ts), so a trip starts and ends where deviceMoving and deviceStopped say it does.
import { jsonSafe, measureLeg, readNumber, readText, updateMotion } from '../../engine/index.ts';
import type { EngineSettings, MotionState, StoredPosition } from '../../engine/index.ts';
import type { LatLon } from '../../geo/index.ts';

const MS_PER_HOUR = 3_600_000;
/** Metres per second in a knot. */
const METERS_PER_SECOND_PER_KNOT = 1852 / 3600;

/** A stored position as the machine reads it: it always has an id. */
export type SegmentedPosition = StoredPosition & { id: number };

/** One position as a segment's boundary: where it was, and the device's readings there. */
export interface Mark {
  positionId: number;
  time: number;
  lat: number;
  lon: number;
  speed: number;
  /** The odometer the device last reported (`odometer` or `totalDistance`, metres), null until it reports one. */
  odometer: number | null;
  /** Metres measured in great-circle steps between valid fixes since the device's first position. */
  measured: number;
  /** Last reported `fuel` (a level) and `fuelUsed` (a counter). */
  fuel: number | null;
  fuelUsed: number | null;
  /** Last reported `hours` (engine hours, milliseconds). */
  hours: number | null;
  driverUniqueId: string | null;
}

export type SegmentKind = 'trip' | 'stop';

/** The segment in progress. */
export interface OpenSegment {
  kind: SegmentKind;
  start: Mark;
  /** Highest speed from the start up to the position where the pending change (if any) began. */
  maxSpeed: number;
}

/**
 * One device's positions over some time, summed: each position brings its own speed and the step from the position
 * before it (distance, engine time, fuel spent). The odometers are the reported reading, else the measured total.
 */
export interface Sums {
  firstTime: number;
  lastTime: number;
  positions: number;
  distance: number;
  maxSpeed: number;
  speedSum: number;
  startOdometer: number;
  endOdometer: number;
  engineHours: number;
  spentFuel: number;
}

/** One device's positions within one UTC hour, summed (a row of summary_hours). */
export interface HourSums extends Sums {
  hourStart: number;
}

/** What the sums of the next position start from: the last position taken and the last valid fix. */
export interface SumsTrail {
  last: Mark | null;
  lastFix: LatLon | null;
}

/** Everything the machine remembers about one device: plain JSON, stored in motion_states and in the checkpoints. */
export interface SegmentationState {
  motion: MotionState;
  /** The last position taken. */
  last: Mark | null;
  lastFix: LatLon | null;
  /** The position where the motion change now pending began. */
  pending: Mark | null;
  /** Highest speed since the pending change began. */
  pendingMaxSpeed: number;
  open: OpenSegment | null;
  hour: HourSums | null;
}

/** A trip or a stop between two positions; `ongoing` when its end is only the latest position so far. */
export interface Segment {
  kind: SegmentKind;
  start: Mark;
  end: Mark;
  maxSpeed: number;
  ongoing: boolean;
}

export interface StepResult {
  state: SegmentationState;
  /** Segments this position ended. */
  closed: Segment[];
  /** The hour this position began: the state before it is a checkpoint (set when the position opened a new hour). */
  hourBegun: boolean;
}

export function initialSegmentationState(): SegmentationState {
  return { motion: { moving: false, lastMotion: false, pending: null }, last: null, lastFix: null, pending: null, pendingMaxSpeed: 0, open: null, hour: null };
}

export function hourOf(time: number): number {
  return Math.floor(time / MS_PER_HOUR) * MS_PER_HOUR;
}

/** Orders positions as the machine takes them. */
export function compareKeys(a: { fixTime: number; id: number }, b: { fixTime: number; id: number }): number {
  return a.fixTime - b.fixTime || a.id - b.id;
}

/**
 * Takes one position (after every position before it in (fixTime, id) order). `settings` are the device's effective
 * ones (engine/values.ts effectiveSettings). The input state is not modified.
 */
export function step(state: SegmentationState, position: SegmentedPosition, settings: EngineSettings): StepResult {
  const { mark, lastFix } = take(state, position);
  const previous = state.last;
  const { hour, hourBegun } = addToHour(state.hour, previous, mark);
  const motion = updateMotion(state.motion, {
    position,
    previous: previous && { id: previous.positionId, fixTime: previous.time, alarms: [] },
    // The device's own odometer where it reports one (a trip's distance is measured the same way).
    totalDistance: mark.odometer ?? mark.measured,
    settings,
  });

  const closed: Segment[] = [];
  let open = state.open;
  let pending = state.pending;
  let pendingMaxSpeed = state.pendingMaxSpeed;
  const changed = motion.events[0];
  // The first position opens a stop (the engine's initial state): a device that starts moving confirms a trip from it.
  open ??= { kind: 'stop', start: mark, maxSpeed: mark.speed };
  if (changed) {
    // The confirmed change began at the pending position, or, after a gap without data, at the last one heard.
    const boundary = pending !== null && changed.attributes?.['startPositionId'] === pending.positionId ? pending : (previous as Mark);
    const beforeBoundary = boundary === pending ? open.maxSpeed : Math.max(open.maxSpeed, pendingMaxSpeed);
    const ended: Segment = { kind: open.kind, start: open.start, end: boundary, maxSpeed: Math.max(beforeBoundary, boundary.speed), ongoing: false };
    if (ended.end.positionId !== ended.start.positionId) closed.push(ended);
    const since = boundary === pending ? Math.max(pendingMaxSpeed, mark.speed) : Math.max(boundary.speed, mark.speed);
    open = { kind: changed.type === 'deviceMoving' ? 'trip' : 'stop', start: boundary, maxSpeed: since };
    pending = null;
    pendingMaxSpeed = 0;
  } else if (motion.motion.pending !== null && motion.motion.pending !== state.motion.pending) {
    // A change begins here (or begins again: the previous one was cancelled on the way).
    if (pending !== null) open = { ...open, maxSpeed: Math.max(open.maxSpeed, pendingMaxSpeed) };
    pending = mark;
    pendingMaxSpeed = mark.speed;
  } else if (motion.motion.pending === null && pending !== null) {
    // Back to the confirmed state: the positions of the cancelled change belong to the open segment.
    open = { ...open, maxSpeed: Math.max(open.maxSpeed, pendingMaxSpeed, mark.speed) };
    pending = null;
    pendingMaxSpeed = 0;
  } else if (pending !== null) {
    pendingMaxSpeed = Math.max(pendingMaxSpeed, mark.speed);
  } else {
    open = { ...open, maxSpeed: Math.max(open.maxSpeed, mark.speed) };
  }

  return {
    state: { motion: motion.motion, last: mark, lastFix, pending, pendingMaxSpeed, open, hour },
    closed,
    hourBegun,
  };
}

/**
 * Sums a run of positions (in order, after the trail) by the rule summary_hours is written by, so a part of an hour
 * adds up with whole hours; a step from a position before `stepsSince` counts nothing. The sums are null without positions.
 */
export function sumsOfRun(trail: SumsTrail, positions: readonly SegmentedPosition[], stepsSince = Number.MIN_SAFE_INTEGER): { sums: Sums | null; trail: SumsTrail } {
  let sums: Sums | null = null;
  let { last, lastFix } = trail;
  for (const position of positions) {
    const taken = take({ last, lastFix }, position);
    sums = addPosition(sums, last !== null && last.time >= stepsSince ? last : null, taken.mark);
    last = taken.mark;
    lastFix = taken.lastFix;
  }
  return { sums, trail: { last, lastFix } };
}

/** A position's mark (its readings, or the last ones reported before it) and the last valid fix after it. */
function take(trail: SumsTrail, position: SegmentedPosition): { mark: Mark; lastFix: LatLon | null } {
  const attributes = position.attributes ?? {};
  const { fix, leg } = measureLeg(trail.lastFix, position);
  const previous = trail.last;
  const mark: Mark = {
    positionId: position.id,
    time: position.fixTime,
    // As JSON keeps them: the state goes through JSON between rounds, and a position read back must give the same rows.
    lat: jsonSafe(position.latitude),
    lon: jsonSafe(position.longitude),
    speed: jsonSafe(position.speed ?? 0),
    odometer: reportedOdometer(attributes) ?? previous?.odometer ?? null,
    measured: (previous?.measured ?? 0) + leg,
    fuel: readNumber(attributes['fuel']) ?? previous?.fuel ?? null,
    fuelUsed: readNumber(attributes['fuelUsed']) ?? previous?.fuelUsed ?? null,
    hours: readNumber(attributes['hours']) ?? previous?.hours ?? null,
    driverUniqueId: readText(attributes['driverUniqueId']) ?? previous?.driverUniqueId ?? null,
  };
  return { mark, lastFix: fix ?? trail.lastFix };
}

/** The segment in progress, ending at the latest position; none before the first position or while it has no length. */
export function ongoingSegment(state: SegmentationState): Segment | null {
  const { open, last } = state;
  if (open === null || last === null || last.positionId === open.start.positionId) return null;
  return { kind: open.kind, start: open.start, end: last, maxSpeed: Math.max(open.maxSpeed, state.pendingMaxSpeed), ongoing: true };
}

/** The odometer between two marks where the device reported one at both, else the distance measured. */
export function distanceBetween(start: Mark, end: Mark): { distance: number; startOdometer: number; endOdometer: number } {
  if (start.odometer !== null && end.odometer !== null) {
    return { distance: end.odometer - start.odometer, startOdometer: start.odometer, endOdometer: end.odometer };
  }
  return { distance: end.measured - start.measured, startOdometer: start.measured, endOdometer: end.measured };
}

/** Fuel spent between two marks: the fall of `fuel`, else the rise of `fuelUsed`; null when the device reports neither. */
export function fuelBetween(start: Mark, end: Mark): number | null {
  if (start.fuel !== null && end.fuel !== null) return start.fuel - end.fuel;
  if (start.fuelUsed !== null && end.fuelUsed !== null) return end.fuelUsed - start.fuelUsed;
  return null;
}

/** Engine time between two marks (ms) from the `hours` attribute; null when the device does not report it. */
export function hoursBetween(start: Mark, end: Mark): number | null {
  return start.hours !== null && end.hours !== null ? Math.round(end.hours - start.hours) : null;
}

/** Average speed in knots over a distance (m) and a duration (ms). */
export function averageKnots(distance: number, durationMs: number): number {
  return durationMs > 0 ? distance / (durationMs / 1000) / METERS_PER_SECOND_PER_KNOT : 0;
}

function reportedOdometer(attributes: Record<string, unknown>): number | null {
  const value = readNumber(attributes['odometer']) ?? readNumber(attributes['totalDistance']);
  return value !== null && value > 0 ? value : null;
}

/** Adds a position to its hour's sums; a step between two positions counts in the hour of the later one. */
function addToHour(hour: HourSums | null, previous: Mark | null, mark: Mark): { hour: HourSums; hourBegun: boolean } {
  const hourStart = hourOf(mark.time);
  const begun = hour === null || hour.hourStart !== hourStart;
  return { hourBegun: begun, hour: { ...addPosition(begun ? null : hour, previous, mark), hourStart } };
}

/** Adds a position, and the step to it from `previous` (none from null), to the sums (null: none yet). */
function addPosition(sums: Sums | null, previous: Mark | null, mark: Mark): Sums {
  const reading = mark.odometer ?? mark.measured;
  const base: Sums = sums ?? { firstTime: mark.time, lastTime: mark.time, positions: 0, distance: 0, maxSpeed: 0, speedSum: 0, startOdometer: reading, endOdometer: reading, engineHours: 0, spentFuel: 0 };
  return {
    ...base,
    lastTime: mark.time,
    positions: base.positions + 1,
    distance: base.distance + (previous === null ? 0 : distanceBetween(previous, mark).distance),
    maxSpeed: Math.max(base.maxSpeed, mark.speed),
    speedSum: base.speedSum + mark.speed,
    endOdometer: reading,
    engineHours: base.engineHours + (previous === null ? 0 : (hoursBetween(previous, mark) ?? 0)),
    spentFuel: base.spentFuel + (previous === null ? 0 : (fuelBetween(previous, mark) ?? 0)),
  };
}
