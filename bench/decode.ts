import { gt06Protocol } from '../src/services/tracking/protocols/gt06/decoder.ts';
import { h02Protocol } from '../src/services/tracking/protocols/h02/decoder.ts';
import { teltonikaProtocol } from '../src/services/tracking/protocols/teltonika/decoder.ts';
import type { ConnectionState, TcpProtocol } from '../src/services/tracking/protocols/types.ts';
import { GT06_REPLAY } from '../test/services/tracking/protocols/traccar-replay/gt06.ts';
import { H02_REPLAY } from '../test/services/tracking/protocols/traccar-replay/h02.ts';
import type { ReplayRow } from '../test/services/tracking/protocols/traccar-replay/replay-row.ts';
import { TELTONIKA_REPLAY } from '../test/services/tracking/protocols/traccar-replay/teltonika.ts';
import type { Figure } from './measure.ts';

/** One protocol's decoder and the frames it is timed on; a new protocol is one more row. */
export interface DecodeBenchRow {
  protocol: TcpProtocol;
  frames: readonly Buffer[];
  /** The connection state a frame is decoded in (e.g. after the Teltonika handshake). */
  state(): ConnectionState;
}

/** The frames of Traccar's decoder tests that give a located position: what real devices send most. */
function locatedFrames(rows: readonly ReplayRow[]): Buffer[] {
  return rows
    .filter((row) => row.traccar === 'location' && row.expect !== 'refused' && row.expect.positions.length > 0)
    .map((row) => (row.hex !== undefined ? Buffer.from(row.hex, 'hex') : Buffer.from(row.text ?? '', 'latin1')));
}

export const DECODE_BENCH: readonly DecodeBenchRow[] = [
  { protocol: gt06Protocol, frames: locatedFrames(GT06_REPLAY), state: () => ({}) },
  { protocol: teltonikaProtocol, frames: locatedFrames(TELTONIKA_REPLAY), state: () => ({ teltonikaHandshakeDone: true }) },
  { protocol: h02Protocol, frames: locatedFrames(H02_REPLAY), state: () => ({}) },
];

const ROUNDS = 5;
const ROUND_MS = 300;

/** Microseconds per frame over one round: the row's frames decoded in turn until ROUND_MS has passed. */
function round(row: DecodeBenchRow, now: Date): number {
  let decoded = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(ROUND_MS * 1e6);
  let elapsed = 0n;
  do {
    for (const frame of row.frames) row.protocol.decode(frame, row.state(), now);
    decoded += row.frames.length;
    elapsed = process.hrtime.bigint() - start;
  } while (start + elapsed < deadline);
  return Number(elapsed) / 1000 / decoded;
}

/**
 * Decode time per frame (µs), in this process: the median of ROUNDS rounds after a warm-up round. Absolute figures,
 * unlike the rest of the bench: a decoder is pure CPU work on one core, so the noise is the machine's load alone.
 */
export function benchDecode(): Figure[] {
  const now = new Date();
  return DECODE_BENCH.map((row) => {
    round(row, now);
    const rounds = Array.from({ length: ROUNDS }, () => round(row, now)).sort((a, b) => a - b);
    return {
      name: `${row.protocol.name}: decode, ${row.frames.length} real frames`,
      value: `${rounds[Math.floor(ROUNDS / 2)]!.toFixed(2)} µs/frame`,
    };
  });
}
