// The protocol registry (DESIGN §1): one entry per device protocol, the only list of protocols. Config reads each
// entry's port variable, the listeners its transports and decoder, commands its decoder's command encoder, the metrics
// its name, the simulator and the tests its simulated tracker. A new protocol is one folder (`<name>/decoder.ts`,
// `<name>/simulator.ts`) plus one line here.
//
// This list is static: importing it loads no decoder. Each entry names its decoder and its simulated tracker by a
// function that imports them on demand, so a process that runs no device listener (SERVICES=auth) never loads a
// decoder, and the server never loads a simulated tracker.
import type { SimulatedTracker } from './simulated-tracker.ts';
import type { TcpProtocol } from './types.ts';

/** How devices reach a listener: OsmAnd's HTTP requests, or frames over TCP and UDP. */
export type Transport = 'http' | 'tcp' | 'udp';

export interface ProtocolEntry {
  /** Stored on positions, the `protocol` label of the metrics, the simulator's `--protocol`. */
  readonly name: string;
  /** The variable that sets the listener's port, and its default: Traccar's port for the protocol. */
  readonly port: { readonly variable: string; readonly default: number };
  /** The listeners opened on that port; UDP shares the TCP port number. */
  readonly transports: readonly Transport[];
  /** The frame decoder, with its command encoder (`commands`) where the server can send commands; absent for HTTP. */
  readonly decoder?: () => Promise<TcpProtocol>;
  /** What a simulated tracker of the protocol sends, and how it reads the server. */
  readonly simulator: () => Promise<SimulatedTracker>;
}

export const PROTOCOL_REGISTRY = [
  { name: 'osmand', port: { variable: 'OSMAND_PORT', default: 5055 }, transports: ['http'], simulator: async () => (await import('./osmand/simulator.ts')).osmandTracker },
  { name: 'gt06', port: { variable: 'GT06_PORT', default: 5023 }, transports: ['tcp'], decoder: async () => (await import('./gt06/decoder.ts')).gt06Protocol, simulator: async () => (await import('./gt06/simulator.ts')).gt06Tracker },
  { name: 'teltonika', port: { variable: 'TELTONIKA_PORT', default: 5027 }, transports: ['tcp'], decoder: async () => (await import('./teltonika/decoder.ts')).teltonikaProtocol, simulator: async () => (await import('./teltonika/simulator.ts')).teltonikaTracker },
  { name: 'h02', port: { variable: 'H02_PORT', default: 5013 }, transports: ['tcp'], decoder: async () => (await import('./h02/decoder.ts')).h02Protocol, simulator: async () => (await import('./h02/simulator.ts')).h02Tracker },
  { name: 'jt808', port: { variable: 'JT808_PORT', default: 5015 }, transports: ['tcp'], decoder: async () => (await import('./jt808/decoder.ts')).jt808Protocol, simulator: async () => (await import('./jt808/simulator.ts')).jt808Tracker },
  { name: 'gps103', port: { variable: 'GPS103_PORT', default: 5001 }, transports: ['tcp', 'udp'], decoder: async () => (await import('./gps103/decoder.ts')).gps103Protocol, simulator: async () => (await import('./gps103/simulator.ts')).gps103Tracker },
  { name: 'tk103', port: { variable: 'TK103_PORT', default: 5002 }, transports: ['tcp', 'udp'], decoder: async () => (await import('./tk103/decoder.ts')).tk103Protocol, simulator: async () => (await import('./tk103/simulator.ts')).tk103Tracker },
  { name: 'wialon', port: { variable: 'WIALON_PORT', default: 5039 }, transports: ['tcp', 'udp'], decoder: async () => (await import('./wialon/decoder.ts')).wialonProtocol, simulator: async () => (await import('./wialon/simulator.ts')).wialonTracker },
  { name: 'watch', port: { variable: 'WATCH_PORT', default: 5093 }, transports: ['tcp'], decoder: async () => (await import('./watch/decoder.ts')).watchProtocol, simulator: async () => (await import('./watch/simulator.ts')).watchTracker },
  { name: 'meitrack', port: { variable: 'MEITRACK_PORT', default: 5020 }, transports: ['tcp', 'udp'], decoder: async () => (await import('./meitrack/decoder.ts')).meitrackProtocol, simulator: async () => (await import('./meitrack/simulator.ts')).meitrackTracker },
  { name: 'suntech', port: { variable: 'SUNTECH_PORT', default: 5011 }, transports: ['tcp'], decoder: async () => (await import('./suntech/decoder.ts')).suntechProtocol, simulator: async () => (await import('./suntech/simulator.ts')).suntechTracker },
  { name: 'ruptela', port: { variable: 'RUPTELA_PORT', default: 5046 }, transports: ['tcp'], decoder: async () => (await import('./ruptela/decoder.ts')).ruptelaProtocol, simulator: async () => (await import('./ruptela/simulator.ts')).ruptelaTracker },
  { name: 'galileo', port: { variable: 'GALILEO_PORT', default: 5034 }, transports: ['tcp'], decoder: async () => (await import('./galileo/decoder.ts')).galileoProtocol, simulator: async () => (await import('./galileo/simulator.ts')).galileoTracker },
  { name: 'gl200', port: { variable: 'GL200_PORT', default: 5004 }, transports: ['tcp', 'udp'], decoder: async () => (await import('./gl200/decoder.ts')).gl200Protocol, simulator: async () => (await import('./gl200/simulator.ts')).gl200Tracker },
] as const satisfies readonly ProtocolEntry[];

export type DeviceProtocol = (typeof PROTOCOL_REGISTRY)[number]['name'];

const BY_NAME: ReadonlyMap<string, ProtocolEntry> = new Map(PROTOCOL_REGISTRY.map((entry) => [entry.name, entry]));

/** The protocol's entry; undefined for a name no entry has (a protocol stored by an older version). */
export function protocolEntry(name: string): ProtocolEntry | undefined {
  return BY_NAME.get(name);
}

/** Every protocol's name, in registry order. */
export const DEVICE_PROTOCOLS: readonly DeviceProtocol[] = PROTOCOL_REGISTRY.map((entry) => entry.name);
