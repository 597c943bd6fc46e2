import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { crc16Ibm } from '../../../../src/services/tracking/protocols/checksum.ts';
import { teltonikaProtocol } from '../../../../src/services/tracking/protocols/teltonika/decoder.ts';
import type { ConnectionState } from '../../../../src/services/tracking/protocols/types.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW, assertCoordinates, assertSameFramesHoweverChunked, decodeStream, hex, roundTo, assertFix } from './protocol-test-helpers.ts';

// Examples from Teltonika's Codec documentation and from Traccar's TeltonikaProtocolDecoderTest.
const HANDSHAKE = '000F313233343536373839303132333435';
const DOC_CODEC_8 = '000000000000003608010000016B40D8EA30010000000000000000000000000000000105021503010101425E0F01F10000601A014E0000000000000000010000C7CF';
const DOC_CODEC_8_EXTENDED = '000000000000004A8E010000016B412CEE000100000000000000000000000000000000010005000100010100010011001D00010010015E2C880002000B000000003544C87A000E000000001DD7E06A00000100002994';
const CODEC_8 = '000000000000004c08010000016818d500580009c28d9f1cb3757a00be00c60f0053000f06f0011503c80001011d00fc0007423799180053cdf80dce426f430f88190bb8560bb802f100005aa110002887e000010000ee8d';
const CODEC_8_EXTENDED_VIN = '00000000000000a38e0100000178b11c9e1000040bbbc91f03190c002100e113001300000010000600ef0100f00100150300c800004501001e070005004237e00018000a00ce166200430f970024059f000300f10000665900c70000001e00100000a1b500000002010000115756315a5a5a32455a38363031353338380119002950303239392c50303637352c50303637342c50303637322c50303637312c50303437312c50324241430100001ad8';
const CODEC_16 = '000000000000009F100100000164D855401800D5E3B744EC11C762023B011A060000000007200A010000010500010600010D00010E00010F00011600011700011800011F001301010000010700000108000001090000010A0000010B0000010C000001100000011100000112000001130000011400000115000001190000011A0000011B0000011C0000011D0000011E000003010200000000010300000000010400000000000100000D3B';
const FOUR_RECORDS_IBUTTON = '000000000000009f080400000159738f76b8012e13b796110ab27600d700000b00004e01000000014e000000000000000000000159738f6ee8012e13b796110ab27600d700000a00004e01000000014e01000b00791c179300000159738f6b00012e13b796110ab27600d700000a00004e01000000014e000000000000000000000159738f5f48012e13b796110ab27600d700000b00004e01000000014e01000b00791c17930400009671';
const CODEC_12_RESPONSE = '00000000000000100C010600000008010300010015D5C5010000D988';

const AFTER_HANDSHAKE: ConnectionState = { teltonikaHandshakeDone: true };

function decode(frame: string) {
  return teltonikaProtocol.decode(hex(frame), { ...AFTER_HANDSHAKE }, NOW);
}

function avlPacket(data: Uint8Array): Buffer {
  const packet = Buffer.alloc(data.length + 12);
  packet.writeUInt32BE(data.length, 4);
  packet.set(data, 8);
  packet.writeUInt32BE(crc16Ibm(data), data.length + 8);
  return packet;
}

// Codec 8 record at the origin with the given 1-, 2- and 4-byte IO elements.
function codec8Record(io1: [number, number][], io2: [number, number][], io4: [number, number][]): Buffer {
  const header = Buffer.alloc(26);
  header.writeBigUInt64BE(1_700_000_000_000n, 0);
  header.writeInt32BE(250_000_000, 9);
  header.writeInt32BE(-500_000_000, 13);
  header.writeUInt8(7, 21);
  header.writeUInt8(0, 24);
  header.writeUInt8(io1.length + io2.length + io4.length, 25);
  const group = (entries: [number, number][], size: number) => {
    const bytes = Buffer.alloc(1 + entries.length * (1 + size));
    bytes.writeUInt8(entries.length, 0);
    entries.forEach(([id, value], index) => {
      bytes.writeUInt8(id, 1 + index * (1 + size));
      bytes.writeUIntBE(value, 2 + index * (1 + size), size);
    });
    return bytes;
  };
  return Buffer.concat([header, group(io1, 1), group(io2, 2), group(io4, 4), Buffer.from([0])]);
}

describe('teltonika handshake', () => {
  it('reads the IMEI and answers with loginReply', () => {
    assert.deepEqual(teltonikaProtocol.decode(hex(HANDSHAKE), {}, NOW), {
      uniqueId: '123456789012345', positions: [], statuses: [],
    });
    assert.deepEqual(teltonikaProtocol.loginReply?.(true), Buffer.from([0x01]));
    assert.deepEqual(teltonikaProtocol.loginReply?.(false), Buffer.from([0x00]));
  });

  it('splits the handshake first, then AVL packets', () => {
    const state: ConnectionState = {};
    const buffer = Buffer.concat([hex(HANDSHAKE), hex(DOC_CODEC_8).subarray(0, 20)]);
    assert.deepEqual(teltonikaProtocol.splitFrames(buffer, state), { frames: [hex(HANDSHAKE)], consumed: 17 });
    assert.equal(state.teltonikaHandshakeDone, true);
    const packet = hex(DOC_CODEC_8);
    assert.deepEqual(teltonikaProtocol.splitFrames(packet, state), { frames: [packet], consumed: packet.length });
    assert.throws(() => teltonikaProtocol.splitFrames(hex(HANDSHAKE), state), ProtocolError);
  });

  it('refuses an AVL packet before the handshake and a non-numeric IMEI', () => {
    assert.throws(() => teltonikaProtocol.splitFrames(hex(DOC_CODEC_8), {}), /IMEI handshake/);
    assert.throws(() => teltonikaProtocol.decode(Buffer.from('\x00\x03abc', 'latin1'), {}, NOW), /IMEI/);
  });
});

describe('teltonika AVL data', () => {
  it('decodes the Codec 8 documentation example', () => {
    const message = decode(DOC_CODEC_8);
    assert.equal(message.positions.length, 1);
    const position = message.positions[0]!;
    assert.equal(position.fixTime.toISOString(), '2019-06-10T10:04:46.000Z');
    assert.equal(position.valid, false, 'no satellites means no valid fix');
    assert.equal(position.latitude, 0);
    assert.equal(position.longitude, 0);
    assert.deepEqual(position.attributes, {
      priority: 1, sat: 0, event: 1, rssi: 3, in1: true, power: 24.079, operator: 24602,
    });
    assert.deepEqual(message.ack, hex('00000001'));
  });

  it('decodes the Codec 8 Extended documentation example', () => {
    const message = decode(DOC_CODEC_8_EXTENDED);
    const position = message.positions[0]!;
    assert.equal(position.fixTime.toISOString(), '2019-06-10T11:36:32.000Z');
    assert.deepEqual(position.attributes, {
      priority: 1, sat: 0, event: 1, in1: true, axisX: 29, odometer: 22949000, io11: 893700218, io14: 500686954,
    });
    assert.deepEqual(message.ack, hex('00000001'));
  });

  it('decodes a Codec 8 record with the mapped IO elements', () => {
    const position = decode(CODEC_8).positions[0]!;
    assertFix(position, '2019-01-04T12:27:19.000Z', true, 48.15231, 16.37452);
    assert.equal(position.altitude, 190);
    assert.equal(position.course, 198);
    assert.equal(roundTo(position.speed, 5), 44.81641);
    assert.deepEqual(position.attributes, {
      priority: 0, sat: 15, event: 0, motion: true, rssi: 3, io200: 0, in1: true, io29: 0, power: 14.233,
      battery: 3.976, bleTemp1: 30, io86: 3000, operator: 23201, odometer: 2656224,
      // Cell 63501 (IO 205) in area 17007 (IO 206) of operator 232 01, Austria: where the fix is.
      network: { cellTowers: [{ mobileCountryCode: 232, mobileNetworkCode: 1, locationAreaCode: 17007, cellId: 63501 }] },
    });
  });

  it('decodes Codec 8 Extended with variable-length elements', () => {
    const position = decode(CODEC_8_EXTENDED_VIN).positions[0]!;
    assert.equal(position.fixTime.toISOString(), '2021-04-08T10:52:26.000Z');
    assertCoordinates(position, 52.02967, 6.78778);
    assert.equal(roundTo(position.speed, 5), 5.39957);
    const { attributes } = position;
    assert.equal(attributes['ignition'], true);
    assert.equal(attributes['motion'], true);
    assert.equal(attributes['vin'], 'WV1ZZZ2EZ86015388');
    assert.equal(attributes['odometer'], 41397);
    assert.equal(attributes['tripOdometer'], 30);
    assert.equal(attributes['power'], 14.304);
    assert.equal(attributes['battery'], 3.991);
    assert.equal(attributes['io281'], Buffer.from('P0299,P0675,P0674,P0672,P0671,P0471,P2BAC').toString('hex'));
  });

  it('decodes Codec 16 with two-byte IO ids', () => {
    const position = decode(CODEC_16).positions[0]!;
    assert.equal(position.fixTime.toISOString(), '2018-07-26T20:43:43.000Z');
    assertCoordinates(position, -33.43792, -70.64967);
    assert.equal(position.altitude, 571);
    assert.equal(position.course, 282);
    assert.equal(position.attributes['sat'], 6);
    assert.equal(position.attributes['io286'], 0);
  });

  it('acknowledges every record and reads iButton driver ids', () => {
    const message = decode(FOUR_RECORDS_IBUTTON);
    assert.equal(message.positions.length, 4);
    assert.deepEqual(message.ack, hex('00000004'));
    assert.equal(message.positions[1]!.attributes['driverUniqueId'], '93171C79000B0001');
    assert.equal(message.positions[0]!.attributes['driverUniqueId'], undefined);
  });

  it('maps alarms, signed values and unknown ids', () => {
    const record = codec8Record(
      [[239, 1], [240, 0], [1, 1], [179, 1], [69, 1], [113, 87], [252, 1], [253, 2], [236, 0], [150, 9]],
      [[66, 12_500], [67, 4_012], [17, 0xfff6], [181, 13], [182, 9], [24, 90]],
      [[16, 123_456], [199, 789], [72, 0xffffff9c]],
    );
    const message = teltonikaProtocol.decode(avlPacket(Buffer.concat([Buffer.from([8, 1]), record, Buffer.from([1])])),
      AFTER_HANDSHAKE, NOW);
    const position = message.positions[0]!;
    assert.equal(position.latitude, -50);
    assert.equal(position.longitude, 25);
    assert.equal(roundTo(position.speed, 5), 48.59611, 'io 24 overrides the GNSS speed');
    assert.deepEqual(position.attributes, {
      priority: 0, sat: 7, event: 0, ignition: true, motion: false, in1: true, out1: true, gps: 1, batteryLevel: 87,
      alarm: 'powerCut,hardBraking', io150: 9, power: 12.5, battery: 4.012, axisX: -10, pdop: 1.3, hdop: 0.9,
      odometer: 123456, tripOdometer: 789, temp1: -10,
    });
  });

  it('keeps a record with impossible coordinates as a status report', () => {
    const record = codec8Record([[239, 1]], [], []);
    record.writeInt32BE(2_000_000_000, 13);
    const message = teltonikaProtocol.decode(avlPacket(Buffer.concat([Buffer.from([8, 1]), record, Buffer.from([1])])),
      AFTER_HANDSHAKE, NOW);
    assert.deepEqual(message.positions, []);
    assert.equal(message.statuses[0]!.attributes['ignition'], true);
    assert.deepEqual(message.ack, hex('00000001'));
  });

  it('treats 0xFF as a keep-alive ping', () => {
    const buffer = Buffer.concat([Buffer.from([0xff]), hex(DOC_CODEC_8)]);
    const { frames } = teltonikaProtocol.splitFrames(buffer, { ...AFTER_HANDSHAKE });
    assert.equal(frames.length, 2);
    assert.deepEqual(teltonikaProtocol.decode(frames[0]!, AFTER_HANDSHAKE, NOW), { positions: [], statuses: [] });
  });
});

describe('teltonika framing and errors', () => {
  it('waits for the rest of a partial packet', () => {
    const packet = hex(CODEC_8);
    for (const length of [3, 7, 20, packet.length - 1]) {
      assert.deepEqual(teltonikaProtocol.splitFrames(packet.subarray(0, length), { ...AFTER_HANDSHAKE }),
        { frames: [], consumed: 0 });
    }
    assert.deepEqual(teltonikaProtocol.splitFrames(hex(HANDSHAKE).subarray(0, 5), {}), { frames: [], consumed: 0 });
  });

  it('splits two packets in one buffer', () => {
    const buffer = Buffer.concat([hex(DOC_CODEC_8), hex(CODEC_8)]);
    assert.deepEqual(teltonikaProtocol.splitFrames(buffer, { ...AFTER_HANDSHAKE }), {
      frames: [hex(DOC_CODEC_8), hex(CODEC_8)], consumed: buffer.length,
    });
  });

  it('throws on garbage', () => {
    assert.throws(() => teltonikaProtocol.splitFrames(Buffer.from('hello'), { ...AFTER_HANDSHAKE }), ProtocolError);
    assert.throws(() => teltonikaProtocol.splitFrames(Buffer.from([0, 0, 0, 0, 0xff, 0, 0, 0]), { ...AFTER_HANDSHAKE }),
      ProtocolError);
    assert.throws(() => teltonikaProtocol.splitFrames(Buffer.from([0x12, 0x34, 0x56]), {}), ProtocolError);
  });

  it('keeps a packet whose CRC or length field is wrong but whose records decode whole, flagged as a mismatch', () => {
    assert.equal(decode(CODEC_8).checksumMismatch, undefined);
    const badCrc = hex(CODEC_8);
    badCrc[badCrc.length - 1] = badCrc[badCrc.length - 1]! ^ 0x40;
    const kept = teltonikaProtocol.decode(badCrc, { ...AFTER_HANDSHAKE }, NOW);
    assert.equal(kept.checksumMismatch, true);
    assert.deepEqual(kept.positions, decode(CODEC_8).positions);
    assert.deepEqual(kept.ack, Buffer.from([0, 0, 0, 1]));
    const badLength = hex(CODEC_8);
    badLength.writeUInt32BE(0, 4);
    assert.equal(teltonikaProtocol.decode(badLength, { ...AFTER_HANDSHAKE }, NOW).checksumMismatch, true);
  });

  it('rejects truncated records, a count mismatch and unsupported codecs', () => {
    assert.throws(() => teltonikaProtocol.decode(hex(CODEC_8).subarray(0, 40), AFTER_HANDSHAKE, NOW), ProtocolError);
    const mismatch = avlPacket(Buffer.concat([Buffer.from([8, 1]), codec8Record([], [], []), Buffer.from([2])]));
    assert.throws(() => teltonikaProtocol.decode(mismatch, AFTER_HANDSHAKE, NOW), /count mismatch/);
    const codec99 = avlPacket(Buffer.from([0x99, 0, 0]));
    assert.throws(() => teltonikaProtocol.decode(codec99, AFTER_HANDSHAKE, NOW), /unsupported codec/);
    // Codec 12 carries command answers (test/services/tracking/protocols/commands.test.ts).
    assert.deepEqual(decode(CODEC_12_RESPONSE).statuses.length, 1);
  });

  it('finds the end of a packet whose firmware sends 0 as its data length by reading its records', () => {
    // Traccar's TeltonikaProtocolDecoderTest: "invalid length and checksum".
    const zeroLength = hex('0000000000000000080100000113fc208dff00209cca800f14f650006f00d60400040004030101150316030001460000015d000100000000');
    const state: ConnectionState = { ...AFTER_HANDSHAKE };
    const buffer = Buffer.concat([zeroLength, hex(CODEC_8)]);
    assert.deepEqual(teltonikaProtocol.splitFrames(buffer, state).frames, [zeroLength, hex(CODEC_8)]);
    assert.deepEqual(teltonikaProtocol.splitFrames(zeroLength.subarray(0, 40), state), { frames: [], consumed: 0 });
    const message = teltonikaProtocol.decode(zeroLength, state, NOW);
    assert.equal(message.checksumMismatch, true);
    assertCoordinates(message.positions[0]!, 25.3032, 54.71464);
    assert.deepEqual(message.ack, Buffer.from([0, 0, 0, 1]));
    assertSameFramesHoweverChunked(teltonikaProtocol, [hex(HANDSHAKE), zeroLength, hex(CODEC_8)]);
  });

  it('refuses a packet without a length whose records do not end within 2048 bytes', () => {
    const endless = Buffer.concat([Buffer.alloc(8), Buffer.from([0x08, 0xff]), Buffer.alloc(2100, 0x01)]);
    assert.throws(() => teltonikaProtocol.splitFrames(endless, { ...AFTER_HANDSHAKE }), /do not end in time/);
    assert.throws(() => teltonikaProtocol.splitFrames(hex('000000000000000099'), { ...AFTER_HANDSHAKE }), ProtocolError);
  });

  it('gives the same frames however the stream is chunked', () => {
    const stream = [HANDSHAKE, DOC_CODEC_8, 'ff', CODEC_8_EXTENDED_VIN, CODEC_16].map(hex);
    assertSameFramesHoweverChunked(teltonikaProtocol, stream);
  });
});

describe('teltonika codec 7 (GH3000)', () => {
  // Traccar's TeltonikaProtocolDecoderTest: two GH3000 records with float coordinates and a 2007-based clock.
  const GH3000 = '000000000000003107024c61410b013f4231c2c141d0beb9003d000005006483ff4c6140eb013f4231c2c141d0beb9003d000005006483ff02000041df';

  it('reads both records: time from 2007, float coordinates, always valid', () => {
    const message = decode(GH3000);
    assert.equal(message.positions.length, 2);
    const [first, second] = message.positions;
    // 0x0c61410b seconds after 2007-01-01; the high two bits of the timestamp are flags.
    assert.equal(first!.fixTime.toISOString(), '2013-07-31T22:30:35.000Z');
    assert.equal(second!.fixTime.toISOString(), '2013-07-31T22:30:03.000Z');
    assert.equal(first!.valid, true);
    assertCoordinates(first!, 44.44019, 26.09313);
    assert.equal(first!.altitude, 61);
    assert.deepEqual(first!.attributes, { sat: 5, lac: 100, cid: 33791 });
    assert.deepEqual(message.ack, Buffer.from([0, 0, 0, 2]));
    assert.equal(message.checksumMismatch, undefined);
  });
});

describe('teltonika fuzzing', () => {
  it('never throws anything but ProtocolError on random bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), fc.boolean(), (bytes, handshakeDone) => {
      decodeStream(teltonikaProtocol, bytes, { teltonikaHandshakeDone: handshakeDone });
    }), { numRuns: 1000 });
  });

  it('never yields out-of-range coordinates from well-formed records with random values', () => {
    fc.assert(fc.property(
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.integer({ min: 0, max: 255 }),
      (longitude, latitude, timestamp, satellites) => {
        const record = codec8Record([[239, satellites & 1]], [[66, satellites * 100]], []);
        record.writeBigUInt64BE(timestamp, 0);
        record.writeInt32BE(longitude, 9);
        record.writeInt32BE(latitude, 13);
        record.writeUInt8(satellites, 21);
        const packet = avlPacket(Buffer.concat([Buffer.from([8, 1]), record, Buffer.from([1])]));
        const [message] = decodeStream(teltonikaProtocol, packet, { ...AFTER_HANDSHAKE });
        assert.equal(message!.positions.length + message!.statuses.length, 1);
      },
    ), { numRuns: 1000 });
  });

  it('decodes random records inside valid AVL packets safely', () => {
    fc.assert(fc.property(
      fc.constantFrom(0x07, 0x08, 0x8e, 0x10), fc.integer({ min: 0, max: 3 }), fc.uint8Array({ maxLength: 120 }),
      (codec, count, records) => {
        const data = Buffer.concat([Buffer.from([codec, count]), records, Buffer.from([count])]);
        decodeStream(teltonikaProtocol, avlPacket(data), { ...AFTER_HANDSHAKE });
      },
    ), { numRuns: 2000 });
  });
});
