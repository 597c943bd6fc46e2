import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ByteReader } from '../../../../src/services/tracking/protocols/byte-reader.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';

describe('ByteReader', () => {
  it('reads big-endian integers of each width', () => {
    const reader = new ByteReader(Buffer.from('ff8001020304050607ffffff9c0000000000000001ffff', 'hex'));
    assert.equal(reader.u8(), 0xff);
    assert.equal(reader.i8(), -128);
    assert.equal(reader.u16(), 0x0102);
    assert.equal(reader.u24(), 0x030405);
    assert.equal(reader.u16(), 0x0607);
    assert.equal(reader.i32(), -100);
    assert.equal(reader.i64(), 1n);
    assert.equal(reader.i16(), -1);
    assert.equal(reader.remaining, 0);
  });

  it('reads within a slice only', () => {
    const reader = new ByteReader(Buffer.from('0001020304', 'hex'), 1, 3);
    assert.deepEqual(reader.bytes(2), Buffer.from('0102', 'hex'));
    assert.throws(() => reader.u8(), ProtocolError);
  });

  it('throws ProtocolError instead of reading past the end', () => {
    const reader = new ByteReader(Buffer.from('0102', 'hex'));
    assert.throws(() => reader.u32(), /truncated/);
    assert.throws(() => reader.skip(3), ProtocolError);
    assert.throws(() => reader.bytes(-1), ProtocolError);
    assert.equal(reader.u16(), 0x0102, 'failed reads consume nothing');
    assert.throws(() => reader.u64(), ProtocolError);
  });
});

describe('ProtocolError', () => {
  it('is an Error named ProtocolError', () => {
    const error = new ProtocolError('bad frame');
    assert.ok(error instanceof Error);
    assert.equal(error.name, 'ProtocolError');
    assert.equal(error.message, 'bad frame');
  });
});

describe('byte reader bounds', () => {
  it('refuses to read past the buffer even when told the data ends later', () => {
    const reader = new ByteReader(Buffer.from([1, 2, 3]), 0, 10);
    assert.equal(reader.u16(), 0x0102);
    assert.throws(() => reader.u16(), ProtocolError);
  });
});
