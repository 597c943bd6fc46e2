import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ruptelaIdentification, ruptelaRecords } from '../../../../src/services/tracking/protocols/ruptela/simulator.ts';
import { ruptelaCommands, ruptelaProtocol } from '../../../../src/services/tracking/protocols/ruptela/decoder.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW, assertCoordinates, assertSameFramesHoweverChunked, decodeOne, decodeStream, hex, assertFix } from './protocol-test-helpers.ts';

// Frames published in Traccar's RuptelaProtocolDecoderTest.
const EXTENDED = '01460003115c885fa8c6440003674f43df002000fb7291ce13fc9230040e400618003d0500080f00ce0001990100823d008600008700008800000201000300000400019500019601001b1e00ad0000b03d01a201070083000000890000008b00030016009d0017009f001d33d6001e1038020041000a6b3f00960000ebf201002201d042f31d000030674f43df002100fb7291ce13fc9230040e400618003d0500080803a000005f3c00607600613c00622000630400650000670009023000000399003d039c0009039806c6005e1b180064004600660000006b066a0282000901039a00005a67030068555531444a46303000693537303637383230006a3500000000000000674f43df002200fb7291ce13fc9230040e400618003d0500080302d2ff047cff047eff04019700f60198000302d3ffff03b6000002028500005a6702f2000068a800092b';
const IDENTIFICATION = '002e000316d53d58d6020f4573303430302e30332e36382e30340000c2b3090d0e950000827b000003e80000003c003c1681';
const EXTENDED_NO_FIX = '03fb0003137ca79f856d01011d386d438b000080000000800000008000ffffffffffff070220211bff011d30c50000386d438b000080000000800000008000ffffffffffff0702201f1bff011d30c30000386d43a9000180000000800000008000ffffffffffffad0320211b16ad01011d30950000386d43c7000080000000800000008000ffffffffffff070220211b00011d30a60000386d4403000080000000800000008000ffffffffffff070220221b00011d30ae0000386d443f000080000000800000008000ffffffffffff070220231b00011d30ae000064c692cb000080000000800000008000ffffffffffff070220231b18011d3091000064c69306000080000000800000008000ffffffffffff070220231b14011d30a7000064c69322000180000000800000008000ffffffffffffad0320241b14ad00011d30a3000064c69342000080000000800000008000ffffffffffff070220241b13011d30ad000064c6934a000180000000800000008000ffffffffffffad0320241b10ad01011d30c3000064c6937e000080000000800000008000ffffffffffff070220241b12011d3092000064c6938b000180000000800000008000ffffffffffffad0320241b12ad00011d30bd000064c69395000180000000800000008000ffffffffffffad0320241b10ad01011d30a6000064c693ba000080000000800000008000ffffffffffff070220251b17011d30a2000064c693d4000180000000800000008000ffffffffffffad0320251b17ad00011d30cc000064c693f6000080000000800000008000ffffffffffff070220251b15011d3090000064c69404000180000000800000008000ffffffffffffad0320251b16ad01011d30a9000064c69432000080000000800000008000ffffffffffff070220261b14011d30be000064c6946d000180000000800000008000ffffffffffffad0320261b15ad00011d30b1000064c6946e000080000000800000008000ffffffffffff070220261b15011d3096000064c694aa000080000000800000008000ffffffffffff070220261b15011d30a8000064c694b2000180000000800000008000ffffffffffffad0320261b15ad01011d30a5000064c694e6000080000000800000008000ffffffffffff070220261b17011d309a000064c694f5000180000000800000008000ffffffffffffad0320261b17ad00011d309c000064c694f6000180000000800000008000ffffffffffffad0320261b17ad01011d3099000064c69522000080000000800000008000ffffffffffff070220261b14011d3094000064c6955e000080000000800000008000ffffffffffff070220261b15011d30b2000064c6959a000080000000800000008000ffffffffffff070220261b14011d30970000ad9e';
const RECORDS = '00800003167d765c155d01000160cd0a310000faae43f7176ee45702332b0c12000006070d05007300cfff260082008600870088000f00d7021100d801c900061d0000c500001e0e988300008900008b000002d0000c9bca720c889a0b047e00000000000000007f0000000000000000800000000000000000810000000000000000a341';
const IO_ANSWER = '0044000313612d76c5cb0744494e313d312c44494e323d302c44494e333d302c44494e343d302c444f5554313d312c444f5554323d312c41494e313d31372c41494e323d3236ac80';
const BATCH = '009200000c07a6bacd4701000552db5cc20000187b8b251ace478e087c044c0a000009070000000052db5cfe0000187b8ab01ace47190879044c0900000b070000000052db5d3a0000187b8b251ace474b089d044c09000009070000000052db5d760000187b8b9a1ace475c08cd044c08000009070000000052db5db20000187b8b141ace46e708b3044c08000009070000000041cb';

const decodeHex = (text: string) => decodeOne(ruptelaProtocol, hex(text));

describe('ruptela', () => {
  it('decodes records: UTC seconds, 1e-7 degrees, altitude, course, km/h, IO elements; answered with the fixed ACK', () => {
    const message = decodeHex(BATCH);
    assert.equal(message.uniqueId, '013227001564487');
    assert.deepEqual(message.ack, hex('0002640113bc'));
    const position = message.positions[0]!;
    assertFix(position, '2014-01-19T05:04:02.000Z', true, 44.972635, 41.074973);
    assert.deepEqual([position.altitude, position.course, position.attributes['sat'], position.attributes['hdop'], position.attributes['event']], [217.2, 11, 10, 0.9, 7]);
    const records = decodeHex(RECORDS).positions[0]!;
    assert.equal(records.fixTime.toISOString(), '2021-06-18T21:03:45.000Z');
    assertCoordinates(records, 39.3143383, -8.9242633);
  });

  it('decodes extended records with 2-byte ids, and keeps records without a fix as statuses', () => {
    const extended = decodeHex(EXTENDED).positions[0]!;
    assert.equal(extended.fixTime.toISOString(), '2024-12-03T17:46:07.000Z');
    assertCoordinates(extended, 33.53196, -7.637765);
    assert.ok(Math.abs(extended.speed - 61 / 1.852) < 1e-9);
    const noFix = decodeHex(EXTENDED_NO_FIX);
    assert.deepEqual([noFix.positions.length, noFix.statuses[0]!.attributes['power']], [0, 12.485]);
  });

  it('answers identification, keeps command answers as results', () => {
    assert.deepEqual(decodeHex(IDENTIFICATION).ack, hex('00027301cb25'));
    assert.deepEqual(decodeHex(IO_ANSWER).statuses, [{ deviceTime: null, attributes: { type: 7, result: 'DIN1=1,DIN2=0,DIN3=0,DIN4=0,DOUT1=1,DOUT2=1,AIN1=17,AIN2=26' } }]);
  });

  it('frames by the length field, refuses garbage lengths, round-trips the simulator frames', () => {
    assert.throws(() => ruptelaProtocol.splitFrames(Buffer.from('GET / HTTP/1.1\r\n'), {}), ProtocolError);
    const fix = { time: new Date('2024-01-01T10:00:00Z'), latitude: -33.5, longitude: -70.25, altitude: 500, speed: 20, course: 181.5, valid: true, ignition: true, odometer: 5000 };
    assertSameFramesHoweverChunked(ruptelaProtocol, [ruptelaIdentification('863514050000001'), ruptelaRecords('863514050000001', [fix, fix]), hex(BATCH)]);
    const message = ruptelaProtocol.decode(ruptelaRecords('863514050000001', [fix]), {}, NOW);
    assert.equal(message.checksumMismatch, undefined);
    const position = message.positions[0]!;
    assert.equal(position.fixTime.toISOString(), fix.time.toISOString());
    assertCoordinates(position, -33.5, -70.25);
    assert.ok(Math.abs(position.speed - 20) < 0.3);
    assert.deepEqual([position.course, position.altitude, position.attributes['ignition'], position.attributes['odometer']], [181.5, 500, true, 5000]);
  });

  it('encodes Traccar\'s commands', () => {
    const context = { uniqueId: '863514050000001', sequence: 1, now: NOW };
    assert.equal(ruptelaCommands.encode({ type: 'engineStop', attributes: {} }, context).subarray(3, -2).toString(), 'pass immobilizer 10');
    assert.equal(ruptelaCommands.encode({ type: 'engineStop', attributes: {} }, context)[2], 108);
    assert.equal(ruptelaCommands.encode({ type: 'outputControl', attributes: { index: 1, data: 1 } }, context).toString('hex').slice(0, 22), '0009750000000100000001');
    assert.deepEqual(ruptelaCommands.encode({ type: 'custom', attributes: { data: '0102' } }, context), hex('0102'));
    assert.throws(() => ruptelaCommands.encode({ type: 'rebootDevice', attributes: {} }, context), ProtocolError);
  });

  it('decodes random and mutated frames safely', () => {
    fc.assert(fc.property(fc.uint8Array({ minLength: 9, maxLength: 300 }), (bytes) => {
      const frame = Buffer.concat([Buffer.from([0, 0]), bytes, Buffer.from([0, 0])]);
      frame.writeUInt16BE(bytes.length, 0);
      decodeStream(ruptelaProtocol, frame);
    }), { numRuns: 2000 });
    const frames = [BATCH, RECORDS, EXTENDED].map(hex);
    fc.assert(fc.property(fc.constantFrom(...frames), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), (frame, changes) => {
      const mutated = Buffer.from(frame);
      for (const [index, value] of changes) mutated[2 + (index % (mutated.length - 2))] = value;
      decodeStream(ruptelaProtocol, mutated);
    }), { numRuns: 2000 });
  });
});
