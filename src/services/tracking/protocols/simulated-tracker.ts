// What every protocol's simulated tracker is (each protocol folder's `simulator.ts` holds one), and the pieces of a
// report the text protocols share. Only the simulator, the tests and the benchmarks load these: the server never does.

/** One report as a simulated tracker sends it. Speed in knots, altitude in metres, odometer in metres. */
export interface DeviceFix {
  time: Date;
  latitude: number;
  longitude: number;
  altitude: number;
  speed: number;
  course: number;
  valid: boolean;
  satellites?: number;
  ignition?: boolean;
  motion?: boolean;
  odometer?: number;
  /** Raises the protocol's SOS alarm. */
  sos?: boolean;
}

/** A tracker of one protocol, as the simulator drives it: what it sends, and how it reads what the server writes. */
export interface SimulatedTracker {
  /** The unique id of the `n`-th simulated device, in the protocol's own id format. */
  uniqueId(n: number): string;
  /** What a tracker sends to log in, in order, each frame answered by one server frame; empty where it names itself in every report. */
  login(uniqueId: string, serial: number): Buffer[];
  /** Whether the answer to a login frame accepts the tracker; absent where any answer does (a refused tracker is only closed). */
  accepted?(answer: Buffer): boolean;
  /** One report of `fix` (OsmAnd: the request's query string), answered by one server frame; `serial` where the protocol numbers its messages. */
  report(uniqueId: string, fix: DeviceFix, serial: number): Buffer;
  /**
   * Length of the whole server frame at the start of `buffer`, or undefined while it is incomplete; `loggedIn` once the
   * login frames are answered. Absent where the server answers nothing (Suntech) or answers over HTTP (OsmAnd).
   */
  serverFrameLength?(buffer: Buffer, loggedIn: boolean): number | undefined;
  /** Where the simulated trackers take commands: telling them from acknowledgements, and answering them as the devices do. */
  commands?: TrackerCommands;
}

export interface TrackerCommands {
  /** Whether a server frame is a command rather than an acknowledgement. */
  isCommand(frame: Buffer): boolean;
  /** A server frame that answers neither a report nor a login (GT06's acknowledgement of a command's answer). */
  acknowledgesAnswer?(frame: Buffer): boolean;
  /** What the tracker answers to a command frame, located at `fix`. */
  answer(uniqueId: string, frame: Buffer, fix: DeviceFix, serial: number): Buffer;
}

/** The unique ids of a protocol: `prefix` and then `n`, zero-padded to `length` digits. */
export function numberedIds(prefix: string, length: number): (n: number) => string {
  return (n) => `${prefix}${String(n).padStart(length - prefix.length, '0')}`;
}

/** Length of the text frame at the start of `buffer` that ends with `terminator`, or undefined while it has not arrived. */
export function textFrameLength(buffer: Buffer, terminator: string): number | undefined {
  const end = buffer.indexOf(terminator);
  return end < 0 ? undefined : end + terminator.length;
}

export const KMH_PER_KNOT = 1.852;

export function kmh(knots: number): number {
  return Math.round(knots * KMH_PER_KNOT);
}

export function twoDigits(value: number): string {
  return String(value).padStart(2, '0');
}

function degreesMinutes(value: number, degreeDigits: number): string {
  const absolute = Math.abs(value);
  const degrees = Math.floor(absolute);
  const minutes = (absolute - degrees) * 60;
  return String(degrees).padStart(degreeDigits, '0') + minutes.toFixed(4).padStart(7, '0');
}

/** `ddmm.mmmm,N,dddmm.mmmm,E`, the coordinate fields of the NMEA-like text protocols. */
export function degreeMinuteFields(fix: DeviceFix): string[] {
  return [
    degreesMinutes(fix.latitude, 2), fix.latitude >= 0 ? 'N' : 'S',
    degreesMinutes(fix.longitude, 3), fix.longitude >= 0 ? 'E' : 'W',
  ];
}

/** hhmmss of the fix, UTC. */
export function utcClock(time: Date): string {
  return twoDigits(time.getUTCHours()) + twoDigits(time.getUTCMinutes()) + twoDigits(time.getUTCSeconds());
}
