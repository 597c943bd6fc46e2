import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { crc16Modbus } from '../../../../src/services/tracking/protocols/checksum.ts';
import { galileoHead, galileoRecord } from '../../../../src/services/tracking/protocols/galileo/simulator.ts';
import { galileoCommands, galileoProtocol } from '../../../../src/services/tracking/protocols/galileo/decoder.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW, assertCoordinates, assertSameFramesHoweverChunked, decodeOne, decodeStream, hex, assertFix } from './protocol-test-helpers.ts';

// Packets published in Traccar's GalileoProtocolDecoderTest.
const RECORDS = '011801018202130338363833343530333230343234323604640010a406207caa9f5b300c830a7901ca0ec802330000000034b802350540003e41703f422b1043234504004600e09000000000a000a100a200a300a400a500a600a700a800a900aa00ab00ac00ad00ae00af00b00000b10000b20000b30000b40000b50000b60000b70000b80000b90000c000000000c100000000c200000000c300000000c400c500c600c700c800c900ca00cb00cc00cd00ce00cf00d000d100d200d4d3140000d60000d70000d80000d90000da0000db00000000dc00000000dd00000000de00000000df00000000f000000000f100000000f200000000f300000000f400000000f500000000f600000000f700000000f800000000f9000000008960';
const RESULT = '01560003383636303530303338343337353836044701e000000000e13c494e414c4c3a696e303d31313230362c696e313d302c696e323d302c696e333d302c696e343d302c696e353d302c4163633d3536363932343732353bfdef';
const HEAD = '011380033836383230343030313534393038370432008590';
const IRIDIUM = '01004e01001c0747ea59333030323334303639363034353930000012000063c85e6903000b0321a8f846aba50000000202001e205f5ec863300c4643fdfdbbe6c8fb330000000034e7013505d400000000';

const decodeHex = (text: string) => decodeOne(galileoProtocol, hex(text));

describe('galileo', () => {
  it('decodes main packets: UTC seconds, 1e-6 degrees, 0.1 km/h, course, altitude, tags; answered 0x02 and the checksum', () => {
    const frame = hex(RECORDS);
    const message = decodeOne(galileoProtocol, frame);
    assert.deepEqual(message.ack, Buffer.from([0x02, frame[frame.length - 2]!, frame[frame.length - 1]!]));
    const position = message.positions[0]!;
    assertFix(position, '2018-09-17T13:22:04.000Z', true, 24.709763, 46.665418);
    assert.deepEqual([position.altitude, position.attributes['versionHw'], position.attributes['index'], position.attributes['hdop']], [696, 130, 1700, 0.5]);
  });

  it('names the device from the head packet and keeps a command answer as a result', () => {
    assert.deepEqual({ ...decodeHex(HEAD), ack: undefined }, { uniqueId: '868204001549087', positions: [], statuses: [], ack: undefined });
    assert.equal(decodeHex(RESULT).statuses[0]!.attributes['result'], 'INALL:in0=11206,in1=0,in2=0,in3=0,in4=0,in5=0,Acc=566924725;');
  });

  it('decodes Iridium packets', () => {
    const message = decodeHex(IRIDIUM);
    assert.equal(message.uniqueId, '300234069604590');
    const position = message.positions[0]!;
    assert.equal(position.fixTime.toISOString(), '2023-01-18T21:02:23.000Z');
    assertCoordinates(position, -33.733818, -70.719813);
  });

  it('frames by the length field, refuses unknown packet types and tags, round-trips the simulator packets', () => {
    assert.throws(() => galileoProtocol.splitFrames(Buffer.from('GET / HTTP/1.1\r\n'), {}), ProtocolError);
    const unknownTag = Buffer.from([0x01, 0x02, 0x00, 0x7f, 0x00, 0x00, 0x00]);
    assert.throws(() => galileoProtocol.decode(unknownTag, {}, NOW), ProtocolError);
    const fix = { time: new Date('2024-01-01T10:00:00Z'), latitude: -33.5, longitude: -70.25, altitude: 500, speed: 20, course: 181.5, valid: true, odometer: 5000 };
    assertSameFramesHoweverChunked(galileoProtocol, [galileoHead('868204000000001'), galileoRecord(fix), hex(RECORDS)]);
    const position = galileoProtocol.decode(galileoRecord(fix), {}, NOW).positions[0]!;
    assert.equal(position.fixTime.toISOString(), fix.time.toISOString());
    assertCoordinates(position, -33.5, -70.25);
    assert.ok(Math.abs(position.speed - 20) < 0.05, '0.1 km/h steps');
    assert.deepEqual([position.course, position.altitude, position.attributes['odometer']], [181.5, 500, 5000]);
  });

  it('encodes text commands with the IMEI, the sequence as command number, and CRC-16/MODBUS', () => {
    const context = { uniqueId: '868204000000001', sequence: 7, now: NOW };
    const frame = galileoCommands.encode({ type: 'outputControl', attributes: { index: 1, data: '1' } }, context);
    assert.equal(frame.readUInt16LE(1), 15 + 7 + 11);
    assert.equal(frame.subarray(3, 4 + 15).toString('latin1'), '\x03868204000000001');
    assert.equal(frame.readUInt32LE(23), 7);
    assert.equal(frame.subarray(29, -2).toString('latin1'), 'Out 1,1');
    assert.equal(frame.readUInt16LE(frame.length - 2), crc16Modbus(frame.subarray(0, -2)));
    assert.throws(() => galileoCommands.encode({ type: 'engineStop', attributes: {} }, context), ProtocolError);
  });

  it('decodes random and mutated packets safely', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), fc.constantFrom(0x01, 0x07, 0x08), (bytes, type) => {
      const packet = Buffer.concat([Buffer.from([type, 0, 0]), bytes, Buffer.from([0, 0])]);
      packet.writeUInt16LE(bytes.length, 1);
      decodeStream(galileoProtocol, packet);
    }), { numRuns: 2000 });
    const packets = [RECORDS, RESULT, IRIDIUM].map(hex);
    fc.assert(fc.property(fc.constantFrom(...packets), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), (packet, changes) => {
      const mutated = Buffer.from(packet);
      for (const [index, value] of changes) mutated[3 + (index % (mutated.length - 3))] = value;
      decodeStream(galileoProtocol, mutated);
    }), { numRuns: 2000 });
  });
});
