// Splitting for the text protocols whose frames end at a terminator byte.

import { ProtocolError } from './types.ts';

const LINE_BREAKS = new Set([0x0d, 0x0a]);

/** The index of the byte that ends the frame starting at `start`, searching below `limit`; -1 when none does. */
export type FrameEndFinder = (buffer: Buffer, start: number, limit: number) => number;

/**
 * Frames of a text protocol: from a byte `isStart` accepts to the first of `ends`, or to the byte a finder names
 * (kept with the frame, as Traccar's framers keep ';' and '*'). Line breaks between frames are skipped; any other
 * byte where a frame should start is garbage. Each call searches at most `maxLength` bytes past a frame start.
 */
export function splitTextFrames(
  buffer: Buffer, isStart: (byte: number) => boolean, ends: ReadonlySet<number> | FrameEndFinder, maxLength: number, name: string,
): { frames: Buffer[]; consumed: number } {
  const findEnd = typeof ends === 'function' ? ends : firstOf(ends);
  const frames: Buffer[] = [];
  let offset = 0;
  while (offset < buffer.length) {
    const first = buffer[offset]!;
    if (LINE_BREAKS.has(first)) {
      offset += 1;
      continue;
    }
    if (!isStart(first)) {
      if (frames.length > 0) break;
      throw new ProtocolError(`${name}: garbage byte 0x${first.toString(16)} where a frame was expected`);
    }
    const end = frameEnd(buffer, offset, findEnd, maxLength, name);
    if (end === undefined) break;
    frames.push(buffer.subarray(offset, end + 1));
    offset = end + 1;
  }
  return { frames, consumed: offset };
}

/**
 * Where the text frame starting at `offset` ends: the index of the first of `ends` within `maxLength` bytes; undefined
 * while the frame is incomplete; a ProtocolError when `maxLength` bytes hold no end.
 */
export function textFrameEnd(buffer: Buffer, offset: number, ends: ReadonlySet<number>, maxLength: number, name: string): number | undefined {
  return frameEnd(buffer, offset, firstOf(ends), maxLength, name);
}

function frameEnd(buffer: Buffer, offset: number, findEnd: FrameEndFinder, maxLength: number, name: string): number | undefined {
  const end = findEnd(buffer, offset, Math.min(buffer.length, offset + maxLength));
  if (end >= 0) return end;
  if (buffer.length - offset >= maxLength) throw new ProtocolError(`${name}: no frame end within ${maxLength} bytes`);
  return undefined;
}

function firstOf(ends: ReadonlySet<number>): FrameEndFinder {
  return (buffer, start, limit) => {
    for (let index = start; index < limit; index++) if (ends.has(buffer[index]!)) return index;
    return -1;
  };
}
