import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { crc16X25 } from '../../../../src/services/tracking/protocols/checksum.ts';
import { gl200Protocol } from '../../../../src/services/tracking/protocols/gl200/decoder.ts';
import { gt06Protocol } from '../../../../src/services/tracking/protocols/gt06/decoder.ts';
import { h02Protocol } from '../../../../src/services/tracking/protocols/h02/decoder.ts';
import { teltonikaProtocol } from '../../../../src/services/tracking/protocols/teltonika/decoder.ts';
import type { ConnectionState, TcpProtocol } from '../../../../src/services/tracking/protocols/types.ts';
import { decodeStream } from './protocol-test-helpers.ts';
import { GL200_BINARY_REPLAY } from './traccar-replay/gl200-binary.ts';
import { GL200_REPLAY } from './traccar-replay/gl200.ts';
import { GT06_REPLAY } from './traccar-replay/gt06.ts';
import { H02_REPLAY } from './traccar-replay/h02.ts';
import type { ReplayRow } from './traccar-replay/replay-row.ts';
import { TELTONIKA_REPLAY } from './traccar-replay/teltonika.ts';

/**
 * The decoders against hostile input, seeded with the real frames of Traccar's tests: random bytes, and those frames
 * mutated (bytes changed, cut, repeated, spliced). Nothing but ProtocolError may escape, every position is well formed
 * (decodeStream checks), and random bytes never make a position.
 */
interface FuzzCase {
  protocol: TcpProtocol;
  seeds: Buffer[];
  state(): ConnectionState;
}

function seedsOf(rows: readonly ReplayRow[]): Buffer[] {
  return rows.map((row) => (row.hex !== undefined ? Buffer.from(row.hex, 'hex') : Buffer.from(row.text ?? '', 'latin1')));
}

const CASES: readonly FuzzCase[] = [
  { protocol: gt06Protocol, seeds: seedsOf(GT06_REPLAY), state: () => ({}) },
  { protocol: teltonikaProtocol, seeds: seedsOf(TELTONIKA_REPLAY), state: () => ({ teltonikaHandshakeDone: true }) },
  { protocol: h02Protocol, seeds: seedsOf(H02_REPLAY), state: () => ({}) },
  { protocol: gl200Protocol, seeds: seedsOf([...GL200_REPLAY, ...GL200_BINARY_REPLAY]), state: () => ({}) },
];

type Mutation =
  | { kind: 'set'; at: number; value: number }
  | { kind: 'cut'; at: number }
  | { kind: 'repeat'; at: number; length: number }
  | { kind: 'splice'; at: number; bytes: Uint8Array };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('repeat' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 64 }) }),
  fc.record({ kind: fc.constant('splice' as const), at: fc.nat(), bytes: fc.uint8Array({ maxLength: 32 }) }),
);

function mutate(frame: Buffer, change: Mutation): Buffer {
  const at = change.at % (frame.length + 1);
  switch (change.kind) {
    case 'set': {
      const copy = Buffer.from(frame);
      if (copy.length > 0) copy[at % copy.length] = change.value;
      return copy;
    }
    case 'cut':
      return frame.subarray(0, at);
    case 'repeat':
      return Buffer.concat([frame.subarray(0, at), frame.subarray(at, at + change.length), frame.subarray(at)]);
    case 'splice':
      return Buffer.concat([frame.subarray(0, at), change.bytes, frame.subarray(at)]);
  }
}

for (const fuzz of CASES) {
  describe(`${fuzz.protocol.name} fuzzing with Traccar's frames`, () => {
    it('survives mutated real frames, alone and in a stream', () => {
      fc.assert(fc.property(
        fc.integer({ min: 0, max: fuzz.seeds.length - 1 }), fc.array(mutation, { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 0, max: fuzz.seeds.length - 1 }),
        (seed, changes, next) => {
          const mutated = changes.reduce(mutate, fuzz.seeds[seed]!);
          decodeStream(fuzz.protocol, mutated, fuzz.state());
          decodeStream(fuzz.protocol, Buffer.concat([mutated, fuzz.seeds[next]!]), fuzz.state());
          try {
            fuzz.protocol.decode(mutated, fuzz.state(), new Date('2024-01-02T03:04:05Z'));
          } catch (error) {
            assert.equal((error as Error).name, 'ProtocolError');
          }
        },
      ), { numRuns: 3000 });
    });

    it('makes no position from random bytes', () => {
      fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const messages = decodeStream(fuzz.protocol, bytes, fuzz.state());
        assert.deepEqual(messages.flatMap((message) => message.positions), []);
      }), { numRuns: 2000 });
    });
  });
}

describe('gt06 fuzzing of the 4G and model-specific types', () => {
  // The length field picks the layout of some types (Traccar's variants), so lengths of every variant are drawn.
  const TYPES = [
    0x11, 0x13, 0x16, 0x17, 0x18, 0x1a, 0x1e, 0x22, 0x24, 0x25, 0x28, 0x2a, 0x2c, 0x2d, 0x2e, 0x31, 0x32, 0x33, 0x34, 0x36,
    0x37, 0x38, 0x39, 0x61, 0x69, 0x70, 0x8c, 0x94, 0x95, 0x9b, 0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa7, 0xa9, 0xf1, 0xf3,
  ];
  const VARIANT_LENGTHS = [0x0c, 0x13, 0x18, 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2d, 0x2e, 0x2f, 0x31, 0x35, 0x37, 0x40, 0x71];

  function frame(extended: boolean, type: number, body: Uint8Array, serial: number): Buffer {
    const head = extended ? Buffer.from([0x79, 0x79, 0, 0, type]) : Buffer.from([0x78, 0x78, 0, type]);
    if (extended) head.writeUInt16BE(body.length + 5, 2);
    else head[2] = body.length + 5;
    const withSerial = Buffer.concat([head, body, Buffer.from([serial >> 8, serial & 0xff])]);
    const crc = crc16X25(withSerial.subarray(2));
    return Buffer.concat([withSerial, Buffer.from([crc >> 8, crc & 0xff, 0x0d, 0x0a])]);
  }

  it('decodes random bodies of each type, in both frame forms and at each variant length, safely', () => {
    fc.assert(fc.property(
      fc.constantFrom(...TYPES), fc.boolean(),
      fc.oneof(fc.uint8Array({ maxLength: 120 }), fc.constantFrom(...VARIANT_LENGTHS).chain((length) => fc.uint8Array({ minLength: length - 5, maxLength: length - 5 }))),
      fc.integer({ min: 0, max: 0xffff }),
      (type, extended, body, serial) => {
        for (const message of decodeStream(gt06Protocol, frame(extended, type, body, serial))) {
          assert.ok(message.ack === undefined || [0x7878, 0x7979].includes(message.ack.readUInt16BE(0)));
        }
      },
    ), { numRuns: 3000 });
  });
});
