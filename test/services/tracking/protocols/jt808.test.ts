import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { jt808Auth, jt808Location, jt808LocationBatch, jt808Register } from '../../../../src/services/tracking/protocols/jt808/simulator.ts';
import { jt808Commands, jt808Protocol, jt808TerminalResponse } from '../../../../src/services/tracking/protocols/jt808/decoder.ts';
import type { DecodedMessage } from '../../../../src/services/tracking/protocols/types.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW, decodeOne, onlyPositionOf, assertCoordinates, assertSameFramesHoweverChunked, decodeStream, hex, assertFix } from './protocol-test-helpers.ts';

// Frames published in Traccar's Jt808ProtocolDecoderTest (captured from devices).
const REGISTER = '7e0100002d0141305678720024002c012f373031313142534a2d41362d424400000000000000000000003035363738373201d4c14238383838386d7e';
const REGISTER_2019 = '7e0100405c010000086649607758216452180000000000000000000000000000004d443330300000000000000000000000000000000000000000000000000038363634393630373735383231363400000000000000000000000000000004000000000000000000000000000000007a7e';
const AUTH = '7E0102000E013511221122000661757468656E7469636174696F6E3F7E';
const HEARTBEAT = '7e0002000004304832546500b7ca7e';
const LOCATION = '7E02000032013511221122000700000000000C000301578CC006CA3A5C00470000000014072317201501040000000030011631010BD07E';
const LOCATION_TAMPERING = '7e02000033421030000018004c000200000004000201556dcb06c4d41d000c00f100fc210118095853010400000000fe0140ff0c01cc000000002694000055d87a7e';
const LOCATION_SOS_VENDOR_TAIL = '7e0200002e094027587492000a000000010000000a03083db7001329f3000000140000130412164952010400000012360a0002341502cb0c20085c107e';
const LOCATION_EB_RECORDS = '7e0200006300000000000008f50000000000000000000000000000000000c7000000cc260615100115010400000001300114310108eb39000c00b20000000000000000000000060089fffffffe000600c5ffffffef0006002d00002db4001100d5303030303030303030303030303030c87e';
const LOCATION_TEMPERATURE = '7e0200003a019172511329001300000000000000020158df7206c9607000370000008424051311201801040000000030010d31011d5708000000000000000082020092510201230b7e';
const BATCH = '7E0704014301356777777707F5000801002600000000000000030159741206CBFD5001720000000116052709062401040000001D03020000002600000000000000030159746606CBFD50016B0000000116052709065301040000001D0302000000260000000000000003015975E406CBFE58013F0000000116052709072701040000001D0302000000260000000000000003015976DE06CBFF10012E0000000116052709075601040000001D0302000000260000000000000003015976BC06CBFED0012D0000000116052709083001040000001D0302000000260000000000000003015976FE06CBFEC001080000000116052709090001040000001D0302000000260000000000000003015976FE06CBFE7800FC0000000116052709093301040000001D0302000000260000000000000003015977A606CBFF3001080000000116052709100201040000001D030200001F7E';
const LOCATION_2 = '7e55018c378580120300032a06052117594022348474113550560705981e0400000002370ac30c0c28660308000000100101020200000a0301cc000c0600a2ffa7ff5e1b7e';
const LOCATION_BLIND = '7e55028c37850011000200c008052106305122348621113550170700001e080000000aaa0000000000000300000000100100020200140a030000000c06003bffa8ffc3c77e';
const COMMAND_RESPONSE = '7e070100150120764632790008000000114d442c53455420434f4e464947204f4b21187e';
const TEXT_RESPONSE = '7e13000012045450091546010900000053006500740020004f004b0021000d197e';
const BATTERY_REPORT = '7e0210000704546000231900884f2606180229579c7e';
const TRANSPARENT_DRIVER = '7e0900001b41305888975883194000184754534c7c367c317c307c31303231383039347c317c0d0ab47e';
const TRANSPARENT_OBD = '7E0900005A4E5DE66FBA2200C4F02204280610090002010D052B0150052C0400129009052D016B052E014F05300231BA053502000005360203B8053802000005390200AD053D0201EA05440150054604009899D90545040000001E000C00030160A85C06D1C1389C7E';
const TIME_SYNC = '7e0109000004546000231900880e7e';

const decodeHex = (text: string): DecodedMessage => decodeOne(jt808Protocol, hex(text));
const onlyPosition = (text: string) => onlyPositionOf(jt808Protocol, hex(text));

describe('jt808 registration, authentication and heartbeat', () => {
  it('answers a registration with 0x8100: the serial, success and the terminal id as auth code', () => {
    const message = decodeHex(REGISTER);
    assert.equal(message.uniqueId, '14130567872');
    assert.deepEqual(message.uniqueIdAlternatives, ['014130567872']);
    assert.deepEqual(message.positions, []);
    assert.deepEqual(message.ack, hex('7e8100000f0141305678720000002400303134313330353637383732887e'));
  });

  it('reads the 2019 header: version byte, 10-byte terminal id, and answers in the same form', () => {
    const message = decodeHex(REGISTER_2019);
    assert.equal(message.uniqueId, '866496077582164');
    assert.deepEqual(message.uniqueIdAlternatives, ['00000866496077582164']);
    const ack = message.ack!;
    assert.equal(ack.readUInt16BE(1), 0x8100);
    assert.equal(ack.readUInt16BE(3) & 0x4000, 0x4000, 'version flag');
    assert.equal(ack.subarray(6, 16).toString('hex'), '00000866496077582164');
  });

  it('answers authentication and heartbeat with a general response 0x8001 echoing serial and type', () => {
    const auth = decodeHex(AUTH);
    assert.equal(auth.uniqueId, '13511221122');
    assert.deepEqual(auth.ack, hex('7e8001000501351122112200000006010200b57e'));
    const heartbeat = decodeHex(HEARTBEAT);
    assert.deepEqual([heartbeat.positions, heartbeat.statuses], [[], []]);
    assert.deepEqual(heartbeat.ack, hex('7e80010005043048325465000000b70002004e7e'));
  });

  it('answers a time request with 0x8109 carrying the server time in UTC', () => {
    const ack = decodeHex(TIME_SYNC).ack!;
    assert.equal(ack.readUInt16BE(1), 0x8109);
    assert.deepEqual([...ack.subarray(13, 21)], [0x07, 0xe8, 1, 2, 3, 4, 5, 0]);
  });
});

describe('jt808 locations', () => {
  it('decodes 0x0200: China Standard Time to UTC, coordinates, validity, status and items', () => {
    const message = decodeHex(LOCATION);
    assert.equal(message.checksumMismatch, true, 'this capture has a wrong checksum, accepted and flagged');
    const position = message.positions[0]!;
    assertFix(position, '2014-07-23T09:20:15.000Z', true, 22.51488, 113.916508);
    assert.equal(position.altitude, 71);
    assert.deepEqual(position.attributes, { ignition: true, blocked: false, charge: false, odometer: 0, rssi: 22, sat: 11 });
    assert.deepEqual(message.ack, hex('7e8001000501351122112200000007020000b57e'));
  });

  it('converts 0.1 km/h to knots and maps alarm bits', () => {
    const position = onlyPosition(LOCATION_TAMPERING);
    assert.equal(position.fixTime.toISOString(), '2021-01-18T01:58:53.000Z');
    assertCoordinates(position, 22.375883, 113.562653);
    assert.ok(Math.abs(position.speed - 24.1 / 1.852) < 1e-9);
    assert.equal(position.course, 252);
    assert.equal(position.attributes['alarm'], 'tampering');
    assert.equal(position.attributes['batteryLevel'], 64);
  });

  it('reads the SOS alarm and the vendor layout of 18 bytes without item ids', () => {
    const position = onlyPosition(LOCATION_SOS_VENDOR_TAIL);
    assert.equal(position.fixTime.toISOString(), '2013-04-12T08:49:52.000Z');
    assertCoordinates(position, 50.871735, -1.255923);
    assert.equal(position.attributes['alarm'], 'sos');
    assert.equal(position.attributes['rssi'], 12);
  });

  it('reads the 0xEB sub-records (power, ICCID, power-off alarm) and an invalid fix', () => {
    const position = onlyPosition(LOCATION_EB_RECORDS);
    assert.equal(position.valid, false);
    assert.equal(position.attributes['power'], 11.7);
    assert.equal(position.attributes['alarm'], 'powerOff');
    assert.equal(position.attributes['iccid'], '00000000000000000000');
  });

  it('reads temperature sensors (0x51)', () => {
    assert.equal(onlyPosition(LOCATION_TEMPERATURE).attributes['temp1'], 29.1);
  });

  it('decodes every record of a 0x0704 batch, marked as archive, with one answer', () => {
    const message = decodeHex(BATCH);
    assert.equal(message.positions.length, 8);
    assert.deepEqual(message.positions.map((position) => position.fixTime.toISOString()).slice(0, 2), ['2016-05-27T01:06:24.000Z', '2016-05-27T01:06:53.000Z']);
    assertCoordinates(message.positions[7]!, 22.64055, 114.032432);
    assert.ok(message.positions.every((position) => position.attributes['archive'] === true && position.valid));
    assert.equal(message.ack!.readUInt16BE(1), 0x8001);
  });

  it('decodes the JT600-style 0x5501 (valid) and 0x5502 (stored, invalid) reports in UTC with their answer', () => {
    const report = decodeHex(LOCATION_2);
    const position = report.positions[0]!;
    assert.equal(position.fixTime.toISOString(), '2021-05-06T17:59:40.000Z');
    assertCoordinates(position, 22.58079, 113.9176);
    assert.deepEqual([position.valid, position.speed, position.course], [true, 5, 304]);
    assert.equal(report.ack!.readUInt16BE(1), 0x4401);
    const blind = onlyPosition(LOCATION_BLIND);
    assert.equal(blind.fixTime.toISOString(), '2021-05-08T06:30:51.000Z');
    assert.deepEqual([blind.valid, blind.altitude, blind.attributes['charge']], [false, 20, true]);
  });

  it('decodes 0x0900 transparent data: an OBD record with its location, a driver card, both answered 0x8001', () => {
    const obd = decodeHex(TRANSPARENT_OBD);
    const position = obd.positions[0]!;
    assertFix(position, '2022-04-27T22:10:09.000Z', true, 23.111772, 114.409784);
    assert.deepEqual([position.attributes['rpm'], position.attributes['coolantTemp'], position.attributes['power']], [952, 67, 12.73]);
    assert.equal(obd.ack!.readUInt16BE(1), 0x8001);
    assert.deepEqual(decodeHex(TRANSPARENT_DRIVER).statuses, [{ deviceTime: null, attributes: { driverUniqueId: '10218094' } }]);
  });

  it('refuses a transparent OBD record whose last item is cut short by the end of the frame', () => {
    // Found by the mutation fuzz below: item 0x0036 claims two bytes and the frame ends after one.
    const cut = '7e0900005a4e5de66fba2200c4f02204280610090002010d052b0150052c0400129009052d016b052e014f05300231ba0535020000003602037e';
    assert.deepEqual(decodeStream(jt808Protocol, Buffer.from(cut, 'hex')), []);
  });

  it('keeps command and text answers as results, and a battery report as a status', () => {
    assert.deepEqual(decodeHex(COMMAND_RESPONSE).statuses, [{ deviceTime: null, attributes: { result: 'MD,SET CONFIG OK!' } }]);
    assert.deepEqual(decodeHex(TEXT_RESPONSE).statuses, [{ deviceTime: null, attributes: { result: 'Set OK!' } }]);
    assert.deepEqual(decodeHex(BATTERY_REPORT).statuses, [{ deviceTime: new Date('2026-06-17T18:29:57.000Z'), attributes: { batteryLevel: 79 } }]);
  });
});

describe('jt808 framing', () => {
  it('undoes 0x7d escapes and escapes the answer', () => {
    const fix = { time: new Date('2024-01-01T10:00:00Z'), latitude: 0x7e7d / 1e6, longitude: 13.4, altitude: 0, speed: 0, course: 0, valid: true };
    const frame = jt808Location('861234567890', fix, 0x7e7d);
    assert.ok(frame.subarray(1, -1).includes(0x7d) && !frame.subarray(1, -1).includes(0x7e));
    const message = jt808Protocol.decode(frame, {}, NOW);
    assert.equal(message.checksumMismatch, undefined);
    assert.equal(message.positions[0]!.latitude, 0x7e7d / 1e6);
    assert.ok(!message.ack!.subarray(1, -1).includes(0x7e), 'serial 0x7e7d is escaped in the answer');
  });

  it('splits back-to-back frames, skips a doubled delimiter, waits for a partial one', () => {
    const register = jt808Register('861234567890', 1);
    const location = jt808Location('861234567890', { time: new Date('2024-01-01T10:00:00Z'), latitude: 1, longitude: 2, altitude: 0, speed: 0, course: 0, valid: true }, 2);
    const stream = Buffer.concat([register, Buffer.from([0x7e]), location.subarray(1), location.subarray(0, 10)]);
    const { frames, consumed } = jt808Protocol.splitFrames(stream, {});
    assert.deepEqual(frames, [register, location]);
    assert.equal(consumed, register.length + location.length);
  });

  it('throws on garbage and on a frame without end within 4096 bytes', () => {
    assert.throws(() => jt808Protocol.splitFrames(Buffer.from('GET / HTTP/1.1'), {}), ProtocolError);
    assert.throws(() => jt808Protocol.splitFrames(Buffer.concat([Buffer.from([0x7e]), Buffer.alloc(5000, 1)]), {}), ProtocolError);
  });

  it('gives the same frames however the stream is chunked', () => {
    const fix = { time: new Date('2024-01-01T10:00:00Z'), latitude: 52.5, longitude: 13.4, altitude: 40, speed: 10, course: 90, valid: true };
    assertSameFramesHoweverChunked(jt808Protocol, [jt808Register('861234567890', 1), jt808Auth('861234567890', '861234567890', 2), jt808Location('861234567890', fix, 3), jt808LocationBatch('861234567890', [fix, fix], 4)]);
  });

  it('round-trips the simulator frames', () => {
    const fix = { time: new Date('2024-01-01T10:00:00Z'), latitude: -33.5, longitude: -70.25, altitude: 500, speed: 20, course: 181, valid: true, ignition: true, odometer: 12_300, sos: true, satellites: 7 };
    const [position] = jt808Protocol.decode(jt808Location('861234567890', fix, 9), {}, NOW).positions;
    assert.equal(position!.fixTime.toISOString(), fix.time.toISOString());
    assertCoordinates(position!, -33.5, -70.25);
    assert.ok(Math.abs(position!.speed - 20) < 0.06);
    assert.deepEqual([position!.course, position!.altitude, position!.attributes['odometer'], position!.attributes['sat'], position!.attributes['alarm'], position!.attributes['ignition']], [181, 500, 12_300, 7, 'sos', true]);
  });
});

describe('jt808 commands', () => {
  const context = { uniqueId: '861234567890', sequence: 1, now: NOW };

  it('encodes engine stop/resume as terminal control 0x8105 and settings as 0x0310, as Traccar does', () => {
    const stop = jt808Commands.encode({ type: 'engineStop', attributes: {} }, context);
    assert.equal(stop.toString('hex'), '7e810500018612345678900000f06b7e');
    const periodic = jt808Commands.encode({ type: 'positionPeriodic', attributes: { frequency: 30 } }, context);
    assert.equal(periodic.subarray(13, -2).toString('hex'), '010604' + '0000001e');
    assert.equal(jt808Commands.encode({ type: 'rebootDevice', attributes: {} }, context).subarray(13, -2).toString('hex'), '01230103');
    assert.equal(jt808Commands.encode({ type: 'alarmArm', attributes: {} }, context).subarray(13, -2).toString('hex'), '0124050175736572');
  });

  it("reads a terminal's general response (0x0001) as the answer to the command it names, and sends nothing back", () => {
    const stop = jt808Commands.encode({ type: 'engineStop', attributes: {} }, context);
    const answer = jt808TerminalResponse(stop, 7);
    // 0x0001, body of 5 bytes, the terminal id, serial 7; then the command's serial (0), its id 0x8105, 0 (success).
    assert.equal(answer.subarray(1, -2).toString('hex'), '0001' + '0005' + '861234567890' + '0007' + '0000' + '8105' + '00');
    const message = decodeOne(jt808Protocol, answer);
    assert.deepEqual(message.statuses, [{ deviceTime: null, attributes: { result: '0x8105 success' } }]);
    assert.equal(message.ack, undefined);
    const failed = Buffer.from(answer);
    failed.writeUInt8(1, failed.length - 3); // the result byte; the checksum after it no longer matches, which is counted only
    assert.deepEqual(decodeOne(jt808Protocol, failed).statuses[0]?.attributes, { result: '0x8105 failure' });
  });

  it('sends custom data as the hex frame given, and refuses what cannot be expressed', () => {
    assert.deepEqual(jt808Commands.encode({ type: 'custom', attributes: { data: '7e0102037e' } }, context), hex('7e0102037e'));
    assert.throws(() => jt808Commands.encode({ type: 'custom', attributes: { data: 'not hex' } }, context), ProtocolError);
    assert.throws(() => jt808Commands.encode({ type: 'positionPeriodic', attributes: { frequency: -1 } }, context), ProtocolError);
    assert.throws(() => jt808Commands.encode({ type: 'engineStop', attributes: {} }, { ...context, uniqueId: 'abc' }), ProtocolError);
    assert.throws(() => jt808Commands.encode({ type: 'sosNumber', attributes: {} }, context), ProtocolError);
  });
});

describe('jt808 fuzzing', () => {
  it('never throws anything but ProtocolError on random bytes after a delimiter', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), fc.constantFrom(0x7e, 0xe7, 0x28), (bytes, marker) => {
      decodeStream(jt808Protocol, Buffer.concat([Buffer.from([marker]), bytes, Buffer.from([marker === 0x28 ? 0x29 : marker])]));
    }), { numRuns: 2000 });
  });

  it('decodes mutated published frames safely', () => {
    const frames = [LOCATION, LOCATION_TAMPERING, LOCATION_EB_RECORDS, BATCH, LOCATION_2, REGISTER, COMMAND_RESPONSE, TRANSPARENT_OBD].map(hex);
    fc.assert(fc.property(fc.constantFrom(...frames), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), (frame, changes) => {
      const mutated = Buffer.from(frame);
      for (const [index, value] of changes) mutated[1 + (index % (mutated.length - 2))] = value;
      decodeStream(jt808Protocol, mutated);
    }), { numRuns: 2000 });
  });

  it('finds no position in garbage: unframed bytes are refused whole, framed ones without a location type give none', () => {
    const locationTypes = new Set([0x0200, 0x0704, 0x0210, 0x5501, 0x5502, 0x0900]);
    fc.assert(fc.property(fc.uint8Array({ minLength: 1, maxLength: 300 }), (bytes) => {
      if (![0x7e, 0xe7, 0x28].includes(bytes[0]!)) assert.throws(() => jt808Protocol.splitFrames(Buffer.from(bytes), {}), ProtocolError);
      const body = bytes.filter((byte) => byte !== 0x7e && byte !== 0x7d);
      if (body.length >= 2 && locationTypes.has(body[0]! * 256 + body[1]!)) return;
      const messages = decodeStream(jt808Protocol, Buffer.concat([Buffer.from([0x7e]), body, Buffer.from([0x7e])]));
      assert.ok(messages.every((message) => message.positions.length === 0));
    }), { numRuns: 2000 });
  });
});
