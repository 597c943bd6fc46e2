// `npm run simulate`: trackers driving around a loop, over the real device protocols, so a new
// installation shows moving devices and firing events, and the benchmark has a load source.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { parseArgs } from 'node:util';
import { Pool, request } from 'undici';
import { distanceMeters } from '../services/tracking/geo/sphere.ts';
import type { LatLon } from '../services/tracking/geo/index.ts';
import { DEVICE_PROTOCOLS, protocolEntry } from '../services/tracking/protocols/registry.ts';
import type { DeviceProtocol } from '../services/tracking/protocols/registry.ts';
import { KMH_PER_KNOT } from '../services/tracking/protocols/simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../services/tracking/protocols/simulated-tracker.ts';

const ACK_TIMEOUT_MS = 15_000;
const RECONNECT_DELAY_MS = 2_000;

export interface SimulationOptions {
  protocol: DeviceProtocol;
  host: string;
  port: number;
  /** One tracker per uniqueId. */
  uniqueIds: readonly string[];
  /** Reports per second per tracker; 0 sends the next report as soon as the previous is acknowledged. */
  rate: number;
  /** A closed loop the trackers drive round, each starting at its own point of it. */
  route: readonly LatLon[];
  /** Average driving speed. */
  speedKmh: number;
  /** How long each tracker parks, ignition off, after every lap. */
  stopSeconds: number;
  /** Stop after this long (undefined: when `signal` aborts). Reports in flight are still acknowledged. */
  durationMs?: number;
  signal?: AbortSignal;
  /** Pause before connecting again after losing the connection (default 2 s). */
  reconnectDelayMs?: number;
  /** Told of each report the server acknowledged (tests check each is stored once). */
  onAcknowledged?: (uniqueId: string, fix: DeviceFix) => void;
  /** Told of each command the server sent a tracker, as it arrived. */
  onCommand?: (uniqueId: string, frame: Buffer) => void;
}

export interface SimulationStats {
  /** Reports written (a Teltonika packet carries one record). */
  sent: number;
  /** Reports the server acknowledged: stored, by the protocol's contract (never, for a protocol the server does not answer: Suntech). */
  acknowledged: number;
  /** Trackers connected now. */
  connected: number;
  /** Trackers the server refused (unknown or disabled device); they stop. */
  refused: number;
  /** Connections lost and opened again. */
  reconnects: number;
  /** Commands the server sent that the trackers answered, as real ones do. */
  commandsAnswered: number;
}

// --- route ---------------------------------------------------------------------------------------------------

/** A loop of ~5 km round a point (Berlin's centre by default): 36 points on a circle of 800 m radius. */
export function generatedRoute(center: LatLon = { lat: 52.52, lon: 13.405 }, radiusMeters = 800): LatLon[] {
  const latDegrees = radiusMeters / 111_320;
  const lonDegrees = latDegrees / Math.cos((center.lat * Math.PI) / 180);
  return Array.from({ length: 36 }, (_, index) => {
    const angle = (index / 36) * 2 * Math.PI;
    return { lat: center.lat + latDegrees * Math.sin(angle), lon: center.lon + lonDegrees * Math.cos(angle) };
  });
}

/** The track, route or way points of a GPX document, in order. */
export function gpxRoute(text: string): LatLon[] {
  const points: LatLon[] = [];
  for (const match of text.matchAll(/<(?:trkpt|rtept|wpt)\b([^>]*)>/g)) {
    const attributes = match[1] ?? '';
    const lat = Number(/\blat\s*=\s*["']([^"']+)["']/.exec(attributes)?.[1]);
    const lon = Number(/\blon\s*=\s*["']([^"']+)["']/.exec(attributes)?.[1]);
    if (Number.isFinite(lat) && Number.isFinite(lon) && Math.abs(lat) <= 90 && Math.abs(lon) <= 180) points.push({ lat, lon });
  }
  if (points.length < 2) throw new Error('the GPX file holds fewer than two track, route or way points');
  return points;
}

function bearing(from: LatLon, to: LatLon): number {
  const rad = Math.PI / 180;
  const y = Math.sin((to.lon - from.lon) * rad) * Math.cos(to.lat * rad);
  const x = Math.cos(from.lat * rad) * Math.sin(to.lat * rad) - Math.sin(from.lat * rad) * Math.cos(to.lat * rad) * Math.cos((to.lon - from.lon) * rad);
  return (Math.atan2(y, x) / rad + 360) % 360;
}

/**
 * One tracker's journey: laps of the loop (closed back to its first point) at the average speed,
 * each followed by a stop. The reported speed swings ±40% round the average, so a speed limit at
 * the average is exceeded on every lap.
 */
class Journey {
  readonly #points: LatLon[];
  readonly #distances: number[];
  readonly #length: number;
  readonly #speed: number;
  readonly #driveMs: number;
  readonly #cycleMs: number;
  readonly #startedAt: number;

  constructor(route: readonly LatLon[], speedKmh: number, stopSeconds: number, phase: number, offset: LatLon, startedAt: number) {
    this.#points = [...route, route[0] as LatLon].map((point) => ({ lat: point.lat + offset.lat, lon: point.lon + offset.lon }));
    this.#distances = [0];
    for (let index = 1; index < this.#points.length; index++) {
      this.#distances.push((this.#distances[index - 1] as number) + distanceMeters(this.#points[index - 1] as LatLon, this.#points[index] as LatLon));
    }
    this.#length = this.#distances.at(-1) as number;
    this.#speed = speedKmh / 3.6;
    this.#driveMs = (this.#length / this.#speed) * 1000;
    this.#cycleMs = this.#driveMs + stopSeconds * 1000;
    this.#startedAt = startedAt - phase * this.#cycleMs;
  }

  at(time: number): DeviceFix {
    const elapsed = time - this.#startedAt;
    const laps = Math.floor(elapsed / this.#cycleMs);
    const inCycle = elapsed - laps * this.#cycleMs;
    const driving = inCycle < this.#driveMs;
    const travelled = driving ? (inCycle / 1000) * this.#speed : 0;
    let segment = 1;
    while (segment < this.#distances.length - 1 && (this.#distances[segment] as number) < travelled) segment++;
    const from = this.#points[segment - 1] as LatLon;
    const to = this.#points[segment] as LatLon;
    const span = (this.#distances[segment] as number) - (this.#distances[segment - 1] as number);
    const share = span > 0 ? (travelled - (this.#distances[segment - 1] as number)) / span : 0;
    const swing = 1 + 0.4 * Math.sin((travelled / this.#length) * 4 * Math.PI);
    return {
      time: new Date(time),
      latitude: from.lat + (to.lat - from.lat) * share,
      longitude: from.lon + (to.lon - from.lon) * share,
      altitude: 35,
      speed: driving ? ((this.#speed * 3.6) / KMH_PER_KNOT) * swing : 0,
      course: Math.round(bearing(from, to)),
      valid: true,
      ignition: driving,
      motion: driving,
      odometer: laps * this.#length + (driving ? travelled : this.#length),
    };
  }
}

// --- trackers ------------------------------------------------------------------------------------------------

class Refused extends Error {}

/** The server closed the connection: before the tracker's first answer, that is how it refuses an unknown device. */
class Closed extends Error {}

/**
 * Reads what the server writes on one TCP connection, frame by frame as the protocol's tracker frames it: the answers
 * to the tracker's login and reports, in order, and the commands, which are taken out of the stream and handed to
 * `onCommand`, as a real tracker acts on them between its acknowledgements.
 */
class AnswerReader {
  #unsorted: Buffer = Buffer.alloc(0);
  readonly #answers: Buffer[] = [];
  /** Answers still due to the login frames: the server frames its answers to them apart from the rest. */
  #loginAnswers: number;
  #wake: (() => void) | undefined;
  readonly #socket: net.Socket;
  readonly #tracker: SimulatedTracker;
  readonly #onCommand: (frame: Buffer) => void;

  constructor(socket: net.Socket, tracker: SimulatedTracker, loginFrames: number, onCommand: (frame: Buffer) => void) {
    this.#loginAnswers = loginFrames;
    this.#socket = socket;
    this.#tracker = tracker;
    this.#onCommand = onCommand;
    socket.on('data', (chunk: Buffer) => {
      this.#unsorted = this.#unsorted.length === 0 ? chunk : Buffer.concat([this.#unsorted, chunk]);
      this.#sort();
      this.#wake?.();
    });
    socket.on('close', () => this.#wake?.());
  }

  #sort(): void {
    const { serverFrameLength, commands } = this.#tracker;
    for (;;) {
      const length = serverFrameLength?.(this.#unsorted, this.#loginAnswers === 0);
      if (length === undefined || this.#unsorted.length < length) return;
      const frame = this.#unsorted.subarray(0, length);
      this.#unsorted = this.#unsorted.subarray(length);
      if (commands?.isCommand(frame)) this.#onCommand(frame);
      else if (!commands?.acknowledgesAnswer?.(frame)) {
        this.#answers.push(frame);
        if (this.#loginAnswers > 0) this.#loginAnswers--;
      }
    }
  }

  /** The server's next answer; fails when the connection closes first (`closed`) or none comes in time. */
  async next(): Promise<Buffer> {
    const deadline = Date.now() + ACK_TIMEOUT_MS;
    for (;;) {
      const answer = this.#answers.shift();
      if (answer) return answer;
      if (this.#socket.destroyed) throw new Closed();
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('no answer in time');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }
}

interface Tracker {
  uniqueId: string;
  journey: Journey;
  /** When this tracker may send its next report. */
  nextAt: number;
  /** The report sent and not yet acknowledged: sent again first on the next connection, as trackers keep a report until it is acknowledged. */
  unacknowledged?: DeviceFix;
}

class Simulation {
  readonly stats: SimulationStats = { sent: 0, acknowledged: 0, connected: 0, refused: 0, reconnects: 0, commandsAnswered: 0 };
  readonly #options: SimulationOptions;
  readonly #sockets = new Set<net.Socket>();
  readonly #pool: Pool | undefined;
  #stopping = false;
  #serial = 0;

  readonly #tracker: SimulatedTracker;

  constructor(options: SimulationOptions, tracker: SimulatedTracker) {
    this.#options = options;
    this.#tracker = tracker;
    this.#pool = options.protocol === 'osmand' ? new Pool(`http://${options.host}:${options.port}`, { connections: Math.min(options.uniqueIds.length, 256) }) : undefined;
  }

  /** Stop sending; reports in flight still wait for their acknowledgement. */
  stop(): void {
    this.#stopping = true;
  }

  async run(): Promise<void> {
    const { uniqueIds, route, speedKmh, stopSeconds } = this.#options;
    const now = Date.now();
    const trackers = uniqueIds.map((uniqueId, index): Tracker => {
      // Spread the trackers over a grid of ~1 km cells and over the loop, and their first reports over a second.
      const offset = { lat: (index % 20) * 0.01, lon: Math.floor(index / 20) * 0.015 };
      const journey = new Journey(route, speedKmh, stopSeconds, index / Math.max(1, uniqueIds.length), offset, now);
      return { uniqueId, journey, nextAt: now + (this.#options.rate > 0 ? (Math.random() * 1000) / this.#options.rate : 0) };
    });
    try {
      await Promise.all(trackers.map((tracker) => this.#drive(tracker)));
    } finally {
      await this.#pool?.close();
    }
  }

  /** Connects, reports until stopped, and connects again after losing the connection. */
  async #drive(tracker: Tracker): Promise<void> {
    while (!this.#stopping) {
      try {
        if (this.#options.protocol === 'osmand') await this.#reportOverHttp(tracker);
        else await this.#session(tracker);
      } catch (error) {
        if (error instanceof Refused) {
          this.stats.refused++;
          return;
        }
        if (this.#stopping) return;
        this.stats.reconnects++;
        await this.#pause(this.#options.reconnectDelayMs ?? RECONNECT_DELAY_MS);
      }
    }
  }

  async #pause(ms: number): Promise<void> {
    const until = Date.now() + ms;
    // `ms` may be fractional (a paced rate): what is left is read once per turn, so it is never negative.
    for (let left = ms; !this.#stopping && left > 0; left = until - Date.now()) await new Promise((resolve) => setTimeout(resolve, Math.min(250, left)));
  }

  /** Waits for the tracker's next turn; false once the simulation stops. */
  async #turn(tracker: Tracker): Promise<boolean> {
    const wait = tracker.nextAt - Date.now();
    if (wait > 0) await this.#pause(wait);
    tracker.nextAt = Math.max(tracker.nextAt + (this.#options.rate > 0 ? 1000 / this.#options.rate : 0), Date.now() - 1000);
    return !this.#stopping;
  }

  async #session(tracker: Tracker): Promise<void> {
    const { host, port } = this.#options;
    const simulated = this.#tracker;
    const socket = net.connect({ host, port });
    socket.setNoDelay(true);
    socket.on('error', () => undefined);
    this.#sockets.add(socket);
    const login = simulated.login(tracker.uniqueId, this.#nextSerial());
    const answers = new AnswerReader(socket, simulated, login.length, (frame) => {
      this.#options.onCommand?.(tracker.uniqueId, frame);
      socket.write(simulated.commands!.answer(tracker.uniqueId, frame, tracker.journey.at(Date.now()), this.#nextSerial()));
      this.stats.commandsAnswered++;
    });
    // Until the first answer, a closed connection is the server refusing the tracker.
    let answered = false;
    const answer = async () => {
      const frame = await answers.next().catch((error: unknown) => {
        throw !answered && error instanceof Closed ? new Refused() : error;
      });
      answered = true;
      return frame;
    };
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('error', reject);
      });
      for (const frame of login) {
        socket.write(frame);
        if (simulated.accepted?.(await answer()) === false) throw new Refused();
      }
      this.stats.connected++;
      try {
        while (await this.#turn(tracker)) {
          const fix = (tracker.unacknowledged ??= tracker.journey.at(Date.now()));
          const report = simulated.report(tracker.uniqueId, fix, this.#nextSerial());
          this.stats.sent++;
          if (simulated.serverFrameLength) {
            socket.write(report);
            await answer();
            this.stats.acknowledged++;
          } else {
            // A protocol the server does not answer: paced by the socket alone.
            await new Promise<void>((resolve, reject) => socket.write(report, (error) => (error ? reject(error) : resolve())));
          }
          this.#acknowledged(tracker, fix);
        }
      } finally {
        this.stats.connected--;
      }
    } finally {
      this.#sockets.delete(socket);
      socket.destroy();
    }
  }

  async #reportOverHttp(tracker: Tracker): Promise<void> {
    const pool = this.#pool as Pool;
    let counted = false;
    try {
      while (await this.#turn(tracker)) {
        this.stats.sent++;
        const fix = (tracker.unacknowledged ??= tracker.journey.at(Date.now()));
        const query = this.#tracker.report(tracker.uniqueId, fix, this.#nextSerial()).toString('latin1');
        const response = await pool.request({ method: 'GET', path: `/?${query}` });
        await response.body.dump();
        if (response.statusCode === 404) throw new Refused();
        if (response.statusCode !== 200) throw new Error(`HTTP ${response.statusCode}`);
        this.stats.acknowledged++;
        this.#acknowledged(tracker, fix);
        if (!counted) {
          counted = true;
          this.stats.connected++;
        }
      }
    } finally {
      if (counted) this.stats.connected--;
    }
  }

  #acknowledged(tracker: Tracker, fix: DeviceFix): void {
    tracker.unacknowledged = undefined;
    this.#options.onAcknowledged?.(tracker.uniqueId, fix);
  }

  #nextSerial(): number {
    this.#serial = (this.#serial + 1) & 0xffff;
    return this.#serial;
  }
}

/** The protocol's simulated tracker, as its registry entry names it. */
export async function simulatedTracker(protocol: DeviceProtocol): Promise<SimulatedTracker> {
  const entry = protocolEntry(protocol);
  if (!entry) throw new Error(`no protocol ${protocol} in the registry`);
  return entry.simulator();
}

/** Drives the trackers until `durationMs` passes or `signal` aborts; answers the counts. */
export async function runSimulation(options: SimulationOptions, onStats?: (stats: SimulationStats) => void, statsEveryMs = 5_000): Promise<SimulationStats> {
  const simulation = new Simulation(options, await simulatedTracker(options.protocol));
  const stop = () => simulation.stop();
  options.signal?.addEventListener('abort', stop, { once: true });
  const timer = options.durationMs === undefined ? undefined : setTimeout(stop, options.durationMs);
  const reporter = onStats ? setInterval(() => onStats({ ...simulation.stats }), statsEveryMs) : undefined;
  try {
    await simulation.run();
  } finally {
    clearTimeout(timer);
    clearInterval(reporter);
    options.signal?.removeEventListener('abort', stop);
  }
  return { ...simulation.stats };
}

// --- registration --------------------------------------------------------------------------------------------

/**
 * Creates the trackers as devices of the given account through the API (existing ones are kept),
 * with thresholds that make the simulated trips raise events within minutes.
 */
export async function registerDevices(options: {
  url: string;
  email: string;
  password: string;
  protocol: DeviceProtocol;
  uniqueIds: readonly string[];
  speedKmh: number;
  stopSeconds: number;
}): Promise<{ created: number; existing: number }> {
  const login = await request(`${options.url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: options.email, password: options.password }),
  });
  const session = (await login.body.json()) as { accessToken?: string; message?: string };
  if (login.statusCode !== 200 || !session.accessToken) throw new Error(`sign-in failed (${login.statusCode}): ${session.message ?? 'no access token'}`);
  const attributes = {
    // Knots: the trips swing above the average speed on every lap.
    speedLimit: Math.round((options.speedKmh * 1.1) / KMH_PER_KNOT),
    minimalParkingDuration: Math.max(10, Math.floor(options.stopSeconds * 0.6)),
  };
  const result = { created: 0, existing: 0 };
  const queue = [...options.uniqueIds.entries()];
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const [index, uniqueId] = next;
      const response = await request(`${options.url}/api/devices/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${session.accessToken}` },
        body: JSON.stringify({ name: `Simulated ${options.protocol} ${index + 1}`, uniqueId, attributes }),
      });
      const body = (await response.body.json()) as { code?: string; message?: string };
      if (response.statusCode === 201) result.created++;
      else if (body.code === 'DEVICE_EXISTS') result.existing++;
      else throw new Error(`creating device ${uniqueId} failed (${response.statusCode}): ${body.message ?? body.code}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return result;
}

/** uniqueIds of `count` trackers from a 15-digit base: IMEI-shaped, as GT06 and Teltonika require (JT808 sends them in its 2019 header). */
export function simulatedIds(base: string, count: number): string[] {
  const start = BigInt(base);
  return Array.from({ length: count }, (_, index) => (start + BigInt(index)).toString().padStart(15, '0'));
}

// --- command line --------------------------------------------------------------------------------------------

const USAGE = `Usage: npm run simulate -- [options]

  --protocol ${DEVICE_PROTOCOLS.join('|')}
                                         device protocol (default teltonika)
  --devices N                            trackers (default 10)
  --rate R                               reports per second per tracker (default 1; 0 = as fast as acknowledged)
  --route file.gpx                       drive this track instead of a loop round Berlin
  --speed KMH                            average speed (default 50)
  --stop SECONDS                         parking time after each lap (default 90)
  --host HOST --port PORT                device listener (default 127.0.0.1 and the protocol's Traccar port)
  --id-base N                            uniqueId of the first tracker, counted up from (default: the protocol's own ids)
  --duration SECONDS                     stop after this long (default: run until Ctrl-C)
  --register                             create the trackers as devices first, through the API:
  --url URL --email E --password P       API base (default http://127.0.0.1:8080) and the account to use`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      protocol: { type: 'string', default: 'teltonika' },
      devices: { type: 'string', default: '10' },
      rate: { type: 'string', default: '1' },
      route: { type: 'string' },
      speed: { type: 'string', default: '50' },
      stop: { type: 'string', default: '90' },
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string' },
      'id-base': { type: 'string' },
      duration: { type: 'string' },
      register: { type: 'boolean', default: false },
      url: { type: 'string', default: 'http://127.0.0.1:8080' },
      email: { type: 'string' },
      password: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const protocol = values.protocol as DeviceProtocol;
  if (!DEVICE_PROTOCOLS.includes(protocol)) throw new UsageError(`unknown protocol '${values.protocol}'`);
  const number = (name: string, text: string | undefined, min: number): number => {
    const value = Number(text);
    if (text === undefined || !Number.isFinite(value) || value < min) throw new UsageError(`--${name} must be a number >= ${min}`);
    return value;
  };
  const devices = Math.floor(number('devices', values.devices, 1));
  const idBase = values['id-base'];
  if (idBase !== undefined && !/^\d{1,15}$/.test(idBase)) throw new UsageError('--id-base must be up to 15 digits');
  const tracker = await simulatedTracker(protocol);
  const uniqueIds = idBase === undefined ? Array.from({ length: devices }, (_, index) => tracker.uniqueId(index + 1)) : simulatedIds(idBase, devices);
  const speedKmh = number('speed', values.speed, 1);
  const stopSeconds = number('stop', values.stop, 0);
  const route = values.route ? gpxRoute(readFileSync(values.route, 'utf8')) : generatedRoute();

  if (values.register) {
    if (!values.email || !values.password) throw new UsageError('--register needs --email and --password');
    const registered = await registerDevices({ url: values.url, email: values.email, password: values.password, protocol, uniqueIds, speedKmh, stopSeconds });
    console.log(`Devices: ${registered.created} created, ${registered.existing} already there.`);
  }

  // By default the protocol's port as the server's registry declares it (Traccar's).
  const port = values.port === undefined ? (protocolEntry(protocol)?.port.default as number) : Math.floor(number('port', values.port, 1));
  const abort = new AbortController();
  process.once('SIGINT', () => abort.abort());
  process.once('SIGTERM', () => abort.abort());
  console.log(`Simulating ${devices} ${protocol} tracker(s) against ${values.host}:${port}; Ctrl-C stops.`);
  let previous = 0;
  const stats = await runSimulation(
    {
      protocol,
      host: values.host,
      port,
      uniqueIds,
      rate: number('rate', values.rate, 0),
      route,
      speedKmh,
      stopSeconds,
      signal: abort.signal,
      ...(values.duration === undefined ? {} : { durationMs: number('duration', values.duration, 0) * 1000 }),
    },
    (current) => {
      console.log(`  ${current.connected} connected, ${((current.acknowledged - previous) / 5).toFixed(0)} reports/s acknowledged, ${current.acknowledged} in all, ${current.refused} refused`);
      previous = current.acknowledged;
    },
  );
  console.log(`Done: ${stats.sent} sent, ${stats.acknowledged} acknowledged, ${stats.refused} tracker(s) refused, ${stats.reconnects} reconnect(s), ${stats.commandsAnswered} command(s) answered.`);
  if (stats.refused > 0) console.log('Refused trackers are unknown to the server (or disabled): add --register --email … --password … to create them.');
}

class UsageError extends Error {}

if (import.meta.main) {
  main().catch((error: unknown) => {
    console.error(error instanceof UsageError ? `${error.message}\n\n${USAGE}` : `simulate: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  });
}
