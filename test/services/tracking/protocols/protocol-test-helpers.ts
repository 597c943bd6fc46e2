import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { ConnectionState, DecodedMessage, TcpProtocol } from '../../../../src/services/tracking/protocols/types.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';

export const NOW = new Date('2024-01-02T03:04:05Z');

export function hex(text: string): Buffer {
  return Buffer.from(text, 'hex');
}

export function assertWellFormed(message: DecodedMessage): void {
  for (const position of message.positions) {
    assert.ok(Number.isFinite(position.latitude) && Math.abs(position.latitude) <= 90, 'latitude in range');
    assert.ok(Number.isFinite(position.longitude) && Math.abs(position.longitude) <= 180, 'longitude in range');
    assert.ok(!Number.isNaN(position.fixTime.getTime()), 'fix time is a date');
    assert.ok(position.deviceTime === null || !Number.isNaN(position.deviceTime.getTime()), 'device time');
    for (const value of [position.speed, position.course, position.altitude, position.accuracy]) {
      assert.ok(Number.isFinite(value), 'finite motion fields');
    }
  }
  for (const status of message.statuses) {
    assert.ok(status.deviceTime === null || !Number.isNaN(status.deviceTime.getTime()), 'status device time');
  }
}

// Feeds bytes through splitFrames and decode the way a connection handler would; only ProtocolError may escape.
export function decodeStream(protocol: TcpProtocol, bytes: Uint8Array, state: ConnectionState = {}): DecodedMessage[] {
  const messages: DecodedMessage[] = [];
  try {
    const { frames, consumed } = protocol.splitFrames(Buffer.from(bytes), state);
    assert.ok(consumed >= 0 && consumed <= bytes.length, 'consumed within buffer');
    for (const frame of frames) {
      try {
        const message = protocol.decode(frame, state, NOW);
        assertWellFormed(message);
        messages.push(message);
      } catch (error) {
        if (!(error instanceof ProtocolError)) {
          throw error;
        }
      }
    }
  } catch (error) {
    if (!(error instanceof ProtocolError)) {
      throw error;
    }
  }
  return messages;
}

// Splits a stream delivered in the given chunks, keeping unconsumed bytes for the next read.
export function splitChunks(protocol: TcpProtocol, chunks: Buffer[], state: ConnectionState = {}): Buffer[] {
  const frames: Buffer[] = [];
  let pending = Buffer.alloc(0);
  for (const chunk of chunks) {
    pending = Buffer.concat([pending, chunk]);
    const result = protocol.splitFrames(pending, state);
    frames.push(...result.frames.map((frame) => Buffer.from(frame)));
    pending = pending.subarray(result.consumed);
  }
  assert.equal(pending.length, 0, 'no bytes left over');
  return frames;
}

/** Splitting gives back exactly the frames of `stream`, however its bytes are cut into chunks. */
export function assertSameFramesHoweverChunked(protocol: TcpProtocol, stream: Buffer[]): void {
  const joined = Buffer.concat(stream);
  fc.assert(fc.property(fc.array(fc.integer({ min: 1, max: joined.length - 1 }), { maxLength: 8 }), (cuts) => {
    const points = [...new Set(cuts)].sort((a, b) => a - b);
    const chunks = [0, ...points].map((start, index) => joined.subarray(start, points[index] ?? joined.length));
    assert.deepEqual(splitChunks(protocol, chunks), stream);
  }), { numRuns: 200 });
}

export function roundTo(value: number, digits: number): number {
  return Number(value.toFixed(digits));
}

// Coordinates agree to 5 decimals (1e-5 degrees, about a metre), the tolerance Traccar's tests use.
export function assertCoordinates(
  position: { latitude: number; longitude: number }, latitude: number, longitude: number,
): void {
  assert.ok(Math.abs(position.latitude - latitude) <= 1e-5, `latitude ${position.latitude} != ${latitude}`);
  assert.ok(Math.abs(position.longitude - longitude) <= 1e-5, `longitude ${position.longitude} != ${longitude}`);
}

/** A fix's time (ISO 8601), validity and coordinates (see assertCoordinates), as Traccar's tests check them. */
export function assertFix(
  position: { fixTime: Date; valid: boolean; latitude: number; longitude: number }, time: string, valid: boolean, latitude: number, longitude: number,
): void {
  assert.equal(position.fixTime.toISOString(), time);
  assert.equal(position.valid, valid);
  assertCoordinates(position, latitude, longitude);
}

/** The one whole frame `bytes` holds, decoded. */
export function decodeOne(protocol: TcpProtocol, bytes: Buffer, state: ConnectionState = {}): DecodedMessage {
  const { frames, consumed } = protocol.splitFrames(bytes, state);
  assert.deepEqual([frames.length, consumed], [1, bytes.length], 'one whole frame');
  return protocol.decode(frames[0]!, state, NOW);
}

/** The one position the one frame of `bytes` carries. */
export function onlyPositionOf(protocol: TcpProtocol, bytes: Buffer) {
  const message = decodeOne(protocol, bytes);
  assert.equal(message.positions.length, 1, 'one position');
  return message.positions[0]!;
}

/** decodeOne and onlyPositionOf for a protocol whose frames are text, taken as Latin-1 like the wire bytes. */
export function textDecoders(protocol: TcpProtocol) {
  return {
    decodeText: (text: string): DecodedMessage => decodeOne(protocol, Buffer.from(text, 'latin1')),
    onlyPosition: (text: string) => onlyPositionOf(protocol, Buffer.from(text, 'latin1')),
  };
}
