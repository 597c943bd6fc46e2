import { ProtocolError } from './types.ts';

// Big-endian cursor over a buffer slice; every read is bounds-checked so truncated input surfaces as ProtocolError.
export class ByteReader {
  readonly buffer: Buffer;
  offset: number;
  readonly end: number;

  constructor(buffer: Buffer, start = 0, end = buffer.length) {
    this.buffer = buffer;
    this.offset = start;
    // A length field may claim more than the buffer holds: reads stop at the buffer's end either way.
    this.end = Math.min(end, buffer.length);
  }

  get remaining(): number {
    return this.end - this.offset;
  }

  private take(length: number): number {
    if (length < 0 || this.offset + length > this.end) {
      throw new ProtocolError(`truncated message: need ${length} bytes at offset ${this.offset}`);
    }
    const start = this.offset;
    this.offset += length;
    return start;
  }

  u8(): number {
    return this.buffer.readUInt8(this.take(1));
  }

  i8(): number {
    return this.buffer.readInt8(this.take(1));
  }

  u16(): number {
    return this.buffer.readUInt16BE(this.take(2));
  }

  i16(): number {
    return this.buffer.readInt16BE(this.take(2));
  }

  u24(): number {
    return this.buffer.readUIntBE(this.take(3), 3);
  }

  u32(): number {
    return this.buffer.readUInt32BE(this.take(4));
  }

  i32(): number {
    return this.buffer.readInt32BE(this.take(4));
  }

  i64(): bigint {
    return this.buffer.readBigInt64BE(this.take(8));
  }

  u64(): bigint {
    return this.buffer.readBigUInt64BE(this.take(8));
  }

  bytes(length: number): Buffer {
    const start = this.take(length);
    return this.buffer.subarray(start, start + length);
  }

  skip(length: number): void {
    this.take(length);
  }
}
