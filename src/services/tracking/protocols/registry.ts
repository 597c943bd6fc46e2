// The protocol registry (DESIGN §1): one entry per device protocol, the only list of protocols. Config reads each
// entry's port variable, the listeners its transports and decoder, commands its command encoder, the metrics its name,
// the simulator and the tests its simulator frames. A new protocol is its decoder module plus one line here.
import type { SimulatorFrames } from '../../../cli/simulator/frames.ts';
import { galileoProtocol } from './galileo/decoder.ts';
import { gl200Protocol } from './gl200/decoder.ts';
import { gps103Protocol } from './gps103/decoder.ts';
import { gt06Protocol } from './gt06/decoder.ts';
import { h02Protocol } from './h02/decoder.ts';
import { jt808Protocol } from './jt808/decoder.ts';
import { meitrackProtocol } from './meitrack/decoder.ts';
import { ruptelaProtocol } from './ruptela/decoder.ts';
import { suntechProtocol } from './suntech/decoder.ts';
import { teltonikaProtocol } from './teltonika/decoder.ts';
import { tk103Protocol } from './tk103/decoder.ts';
import type { TcpProtocol } from './types.ts';
import { watchProtocol } from './watch/decoder.ts';
import { wialonProtocol } from './wialon/decoder.ts';

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
  readonly decoder?: TcpProtocol;
  /** What a simulated tracker sends, loaded on demand: the server never loads the simulator's encoders. */
  readonly simulator: () => Promise<SimulatorFrames>;
}

const frames = () => import('../../../cli/simulator/frames.ts');

export const PROTOCOL_REGISTRY = [
  { name: 'osmand', port: { variable: 'OSMAND_PORT', default: 5055 }, transports: ['http'], simulator: async () => (await frames()).osmand },
  { name: 'gt06', port: { variable: 'GT06_PORT', default: 5023 }, transports: ['tcp'], decoder: gt06Protocol, simulator: async () => (await frames()).gt06 },
  { name: 'teltonika', port: { variable: 'TELTONIKA_PORT', default: 5027 }, transports: ['tcp'], decoder: teltonikaProtocol, simulator: async () => (await frames()).teltonika },
  { name: 'h02', port: { variable: 'H02_PORT', default: 5013 }, transports: ['tcp'], decoder: h02Protocol, simulator: async () => (await frames()).h02 },
  { name: 'jt808', port: { variable: 'JT808_PORT', default: 5015 }, transports: ['tcp'], decoder: jt808Protocol, simulator: async () => (await frames()).jt808 },
  { name: 'gps103', port: { variable: 'GPS103_PORT', default: 5001 }, transports: ['tcp', 'udp'], decoder: gps103Protocol, simulator: async () => (await frames()).gps103 },
  { name: 'tk103', port: { variable: 'TK103_PORT', default: 5002 }, transports: ['tcp', 'udp'], decoder: tk103Protocol, simulator: async () => (await frames()).tk103 },
  { name: 'wialon', port: { variable: 'WIALON_PORT', default: 5039 }, transports: ['tcp', 'udp'], decoder: wialonProtocol, simulator: async () => (await frames()).wialon },
  { name: 'watch', port: { variable: 'WATCH_PORT', default: 5093 }, transports: ['tcp'], decoder: watchProtocol, simulator: async () => (await frames()).watch },
  { name: 'meitrack', port: { variable: 'MEITRACK_PORT', default: 5020 }, transports: ['tcp', 'udp'], decoder: meitrackProtocol, simulator: async () => (await frames()).meitrack },
  { name: 'suntech', port: { variable: 'SUNTECH_PORT', default: 5011 }, transports: ['tcp'], decoder: suntechProtocol, simulator: async () => (await frames()).suntech },
  { name: 'ruptela', port: { variable: 'RUPTELA_PORT', default: 5046 }, transports: ['tcp'], decoder: ruptelaProtocol, simulator: async () => (await frames()).ruptela },
  { name: 'galileo', port: { variable: 'GALILEO_PORT', default: 5034 }, transports: ['tcp'], decoder: galileoProtocol, simulator: async () => (await frames()).galileo },
  { name: 'gl200', port: { variable: 'GL200_PORT', default: 5004 }, transports: ['tcp', 'udp'], decoder: gl200Protocol, simulator: async () => (await frames()).gl200 },
] as const satisfies readonly ProtocolEntry[];

export type DeviceProtocol = (typeof PROTOCOL_REGISTRY)[number]['name'];

const BY_NAME: ReadonlyMap<string, ProtocolEntry> = new Map(PROTOCOL_REGISTRY.map((entry) => [entry.name, entry]));

/** The protocol's entry; undefined for a name no entry has (a protocol stored by an older version). */
export function protocolEntry(name: string): ProtocolEntry | undefined {
  return BY_NAME.get(name);
}

/** Every protocol's name, in registry order. */
export const DEVICE_PROTOCOLS: readonly DeviceProtocol[] = PROTOCOL_REGISTRY.map((entry) => entry.name);
