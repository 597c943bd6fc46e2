import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crc16Ibm, crc16X25 } from '../../../../src/services/tracking/protocols/checksum.ts';

const CHECK_INPUT = Buffer.from('123456789', 'ascii');

describe('crc16X25', () => {
  it('matches the catalogue check value', () => {
    assert.equal(crc16X25(CHECK_INPUT), 0x906e);
  });

  it('matches the GT06 manual login response', () => {
    assert.equal(crc16X25(Buffer.from('05010001', 'hex')), 0xd9dc);
  });

  it('is 0x0000 for empty input', () => {
    assert.equal(crc16X25(Buffer.alloc(0)), 0x0000);
  });
});

describe('crc16Ibm', () => {
  it('matches the catalogue check value of CRC-16/ARC', () => {
    assert.equal(crc16Ibm(CHECK_INPUT), 0xbb3d);
  });

  it('matches the Teltonika Codec 8 documentation example', () => {
    const data = Buffer.from('08010000016B40D8EA30010000000000000000000000000000000105021503010101425E0F01F10000601A014E000000000000000001', 'hex');
    assert.equal(crc16Ibm(data), 0xc7cf);
  });

  it('is 0x0000 for empty input', () => {
    assert.equal(crc16Ibm(Buffer.alloc(0)), 0);
  });
});
