import { ByteReader } from './byte-reader.ts';

// ByteReader with little-endian multi-byte reads (Meitrack's and Galileosky's binary records); still bounds-checked.
export class LittleEndianReader extends ByteReader {
  override u16(): number {
    return this.bytes(2).readUInt16LE(0);
  }

  override i16(): number {
    return this.bytes(2).readInt16LE(0);
  }

  override u32(): number {
    return this.bytes(4).readUInt32LE(0);
  }

  override i32(): number {
    return this.bytes(4).readInt32LE(0);
  }
}
