import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { crc16X25 } from '../../../../src/services/tracking/protocols/checksum.ts';
import { gt06Protocol, gt06Response } from '../../../../src/services/tracking/protocols/gt06.ts';
import type { ConnectionState, DecodedPosition } from '../../../../src/services/tracking/protocols/types.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW, assertCoordinates, assertSameFramesHoweverChunked, decodeStream, hex, roundTo } from './protocol-test-helpers.ts';

// Test vectors published in Traccar's Gt06ProtocolDecoderTest / Gt06FrameDecoderTest and the Concox GT06 manual.
const LOGIN = '78780D01012345678901234500018CDD0D0A';
const LOGIN_WITH_TIME_ZONE = '787811010864717003664467100f190a0002c6d20d0a';
const GPS_LBS = '78781f120f0a140e150bc505e51e780293a9e800540000f601006e0055da00035f240d0a';
const GPS_LBS_ODOMETER = '787823120f081b121d37cb01c8e2cc08afd3c020d50201940701d600a1190041ee100576d1470d0a';
const GPS_LBS_UTC = '787822220F0C1D023305C9027AC8180C46586000140001CC00287D001F71000001000820860D0A';
const GPS_ONLY = '787819100B031A0B1B31CC027AC7FD0C4657BF0115210001001CC6070D0A';
const ALARM_OVERSPEED = '78782516110819110208d402f264dc08289a4058d4c70901944600d300c0954606040600014057e90d0a';
const ALARM_VIBRATION = '787825160F0C1D0A2B21C8027AC8040C46581000146F0901CC00287D001F714804040301001C84CF0D0A';
const ALARM_POWER_CUT = '7878251610051b0f1c34c5022515d504b5dcd20738080902d4022bdf009cba5006640201006759680d0a';
const STATUS = '78780a13440604000201baaf540d0a';
const LBS_ALARM_SOS = '78781219028f0a29e10036f12003040102000875dc0d0a';
const HEARTBEAT = '78780B23C00122040001000818720D0A';
const STRING_ICCID = '7878281520000000003c49434349443a38393838323339303030303039373330323635303e00020d446f260d0a';
const STRING_INFO_UTF16 = '797900262100000000020043006f006d006d0061006e00640020006500720072006f0072002100236e850d0a';
const TIME_REQUEST = '7878058A000688290D0A';
const WRONG_LENGTH_WIFI = '787803691604130318491475905BD30E25001E10BBF7635D14759006E626560501CC0028660F213228660F1F2828660EA81E286610731428660F20140D0A';

function decode(frame: string, state: ConnectionState = {}) {
  return gt06Protocol.decode(hex(frame), state, NOW);
}

function onlyPosition(frame: string, state: ConnectionState = {}): DecodedPosition {
  const message = decode(frame, state);
  assert.equal(message.positions.length, 1);
  assert.equal(message.statuses.length, 0);
  return message.positions[0]!;
}

function assertFix(
  position: DecodedPosition, expected: { time: string; valid: boolean; latitude: number; longitude: number },
): void {
  assert.equal(position.fixTime.toISOString(), expected.time);
  assert.equal(position.valid, expected.valid);
  assertCoordinates(position, expected.latitude, expected.longitude);
}

// An extended (0x7979) frame: two length bytes, so bodies up to 64 KiB.
function frame79(type: number, body: Uint8Array, serial = 1): Buffer {
  const frame = Buffer.alloc(body.length + 11);
  frame.writeUInt16BE(0x7979, 0);
  frame.writeUInt16BE(body.length + 5, 2);
  frame.writeUInt8(type, 4);
  frame.set(body, 5);
  frame.writeUInt16BE(serial, body.length + 5);
  frame.writeUInt16BE(crc16X25(frame.subarray(2, body.length + 7)), body.length + 7);
  frame.writeUInt16BE(0x0d0a, body.length + 9);
  return frame;
}

function frameWithCrc(type: number, body: Uint8Array, serial: number): Buffer {
  const frame = Buffer.alloc(body.length + 10);
  frame.writeUInt16BE(0x7878, 0);
  frame.writeUInt8(body.length + 5, 2);
  frame.writeUInt8(type, 3);
  frame.set(body, 4);
  frame.writeUInt16BE(serial, body.length + 4);
  frame.writeUInt16BE(crc16X25(frame.subarray(2, body.length + 6)), body.length + 6);
  frame.writeUInt16BE(0x0d0a, body.length + 8);
  return frame;
}

describe('gt06 login', () => {
  it('reads the BCD IMEI and answers with the manual\'s response frame', () => {
    const message = decode(LOGIN);
    assert.equal(message.uniqueId, '123456789012345');
    assert.deepEqual(message.positions, []);
    assert.deepEqual(message.statuses, []);
    assert.deepEqual(message.ack, hex('787805010001D9DC0D0A'));
  });

  it('keeps the declared time zone and applies it to later fixes', () => {
    const state: ConnectionState = {};
    const message = decode(LOGIN_WITH_TIME_ZONE, state);
    assert.equal(message.uniqueId, '864717003664467');
    assert.deepEqual(message.ack, hex('787805010002eb470d0a'));
    assert.equal(state.gt06TimeZoneOffsetMinutes, -240);
    assert.equal(onlyPosition(GPS_LBS, state).fixTime.toISOString(), '2015-10-20T18:21:11.000Z');
  });

  it('rejects a login whose IMEI is not BCD', () => {
    const body = Buffer.from('0123456789abcdef', 'hex');
    assert.throws(() => gt06Protocol.decode(frameWithCrc(0x01, body, 1), {}, NOW), /not BCD/);
  });
});

describe('gt06 locations', () => {
  it('decodes GPS+LBS 0x12 and acknowledges it', () => {
    const message = decode(GPS_LBS);
    const position = message.positions[0]!;
    assertFix(position, { time: '2015-10-20T14:21:11.000Z', valid: true, latitude: 54.94535, longitude: 24.01762 });
    assert.equal(position.speed, 0);
    assert.equal(position.course, 0);
    assert.deepEqual(position.attributes, { sat: 5, ignition: false });
    assert.deepEqual(message.ack, hex('787805120003903f0d0a'));
  });

  it('converts km/h to knots and reads the trailing odometer', () => {
    const message = decode(GPS_LBS_ODOMETER);
    const position = message.positions[0]!;
    assertFix(position, { time: '2015-08-27T18:29:55.000Z', valid: true, latitude: 16.63471, longitude: 80.96708 });
    assert.equal(roundTo(position.speed, 5), 17.27862);
    assert.equal(position.course, 258);
    assert.deepEqual(position.attributes, { sat: 11, ignition: true, odometer: 4320784 });
    assert.deepEqual(message.ack, hex('787805120576caad0d0a'));
  });

  it('decodes 0x22 with ACC, upload mode and re-upload flags', () => {
    const message = decode(GPS_LBS_UTC);
    const position = message.positions[0]!;
    assertFix(position, { time: '2015-12-29T02:51:05.000Z', valid: true, latitude: 23.11169, longitude: 114.4093 });
    assert.deepEqual(position.attributes, { sat: 9, ignition: false, event: 0, archive: true });
    assert.deepEqual(message.ack, hex('787805220008a8420d0a'));
  });

  it('decodes GPS-only 0x10', () => {
    const message = decode(GPS_ONLY);
    const position = message.positions[0]!;
    assertFix(position, { time: '2011-03-26T11:27:49.000Z', valid: true, latitude: 23.11168, longitude: 114.40921 });
    assert.equal(roundTo(position.speed, 5), 0.53996);
    assert.equal(position.course, 289);
    assert.deepEqual(message.ack, hex('78780510001ccdf10d0a'));
  });

  it('turns a fix with an impossible date into a status report', () => {
    const body = Buffer.alloc(18);
    body[6] = 0xc5;
    const message = gt06Protocol.decode(frameWithCrc(0x10, body, 3), {}, NOW);
    assert.deepEqual(message.positions, []);
    assert.deepEqual(message.statuses, [{ deviceTime: null, attributes: { sat: 5 } }]);
  });
});

describe('gt06 alarms and status', () => {
  it('maps the overspeed alarm code of 0x16 with the status block', () => {
    const message = decode(ALARM_OVERSPEED);
    const position = message.positions[0]!;
    assertFix(position, { time: '2017-08-25T17:02:08.000Z', valid: true, latitude: 27.46665, longitude: 76.0437 });
    assert.equal(roundTo(position.speed, 5), 47.5162);
    assert.equal(position.course, 199);
    assert.deepEqual(position.attributes, {
      sat: 4, ignition: true, status: 70, charge: true, blocked: false, batteryLevel: 100, rssi: 4, alarm: 'overspeed',
    });
    assert.deepEqual(message.ack, hex('7878051601409a190d0a'));
  });

  it('reports a vibration alarm once when status bits and alarm code agree', () => {
    const message = decode(ALARM_VIBRATION);
    const position = message.positions[0]!;
    assertFix(position, { time: '2015-12-29T10:43:33.000Z', valid: true, latitude: 23.11168, longitude: 114.40925 });
    assert.equal(position.attributes['alarm'], 'vibration');
    assert.equal(position.attributes['batteryLevel'], 66);
    assert.deepEqual(message.ack, hex('78780516001c1b280d0a'));
  });

  it('maps the power cut alarm', () => {
    const message = decode(ALARM_POWER_CUT);
    assert.equal(message.positions[0]!.attributes['alarm'], 'powerCut');
    assert.deepEqual(message.ack, hex('787805160067d67c0d0a'));
  });

  it('decodes the 0x13 heartbeat as a status report', () => {
    const message = decode(STATUS);
    assert.deepEqual(message.positions, []);
    assert.deepEqual(message.statuses, [{
      deviceTime: null,
      attributes: { status: 68, ignition: false, charge: true, blocked: false, batteryLevel: 100, rssi: 4 },
    }]);
    assert.deepEqual(message.ack, hex('7878051301bafb710d0a'));
  });

  it('decodes the 0x19 LBS alarm as a status report with sos', () => {
    const message = decode(LBS_ALARM_SOS);
    assert.equal(message.statuses[0]!.attributes['alarm'], 'sos');
    assert.equal(message.statuses[0]!.attributes['batteryLevel'], 50);
    assert.deepEqual(message.ack, hex('787805190008074a0d0a'));
  });

  it('decodes the 0x23 heartbeat with battery voltage', () => {
    const message = decode(HEARTBEAT);
    assert.deepEqual(message.statuses, [{
      deviceTime: null, attributes: { armed: false, ignition: false, charge: false, battery: 2.9, rssi: 4 },
    }]);
    assert.deepEqual(message.ack, hex('787805230008f29e0d0a'));
  });
});

describe('gt06 other messages', () => {
  it('keeps an ICCID string message as an attribute', () => {
    const message = decode(STRING_ICCID);
    assert.deepEqual(message.statuses, [{ deviceTime: null, attributes: { iccid: '89882390000097302650' } }]);
    assert.deepEqual(message.ack, hex('787805150d449af90d0a'));
  });

  it('decodes a 0x7979 UTF-16 command result without ack', () => {
    const message = decode(STRING_INFO_UTF16);
    assert.deepEqual(message.statuses, [{ deviceTime: null, attributes: { result: 'Command error!' } }]);
    assert.equal(message.ack, undefined);
  });

  it('answers a time request with the server time', () => {
    const message = decode(TIME_REQUEST);
    assert.deepEqual(message.ack, hex('78780b8a1801020304050000e9050d0a'));
  });

  it('acknowledges unknown short frames but not command replies or extended frames', () => {
    const unknown = gt06Response(0x55, 7);
    assert.deepEqual(gt06Protocol.decode(unknown, {}, NOW).ack, unknown);
    assert.equal(gt06Protocol.decode(gt06Response(0x81, 7), {}, NOW).ack, undefined);
  });
});

describe('gt06 framing', () => {
  it('waits for the rest of a partial frame', () => {
    const frame = hex(GPS_LBS);
    assert.deepEqual(gt06Protocol.splitFrames(frame.subarray(0, 10), {}), { frames: [], consumed: 0 });
    assert.deepEqual(gt06Protocol.splitFrames(frame.subarray(0, 3), {}), { frames: [], consumed: 0 });
    assert.deepEqual(gt06Protocol.splitFrames(frame, {}), { frames: [frame], consumed: frame.length });
  });

  it('splits two frames in one buffer', () => {
    const buffer = Buffer.concat([hex(LOGIN), hex(STRING_INFO_UTF16)]);
    const { frames, consumed } = gt06Protocol.splitFrames(buffer, {});
    assert.deepEqual(frames, [hex(LOGIN), hex(STRING_INFO_UTF16)]);
    assert.equal(consumed, buffer.length);
  });

  it('throws on garbage, after returning the frames before it', () => {
    assert.throws(() => gt06Protocol.splitFrames(Buffer.from('GET / HTTP/1.1\r\n'), {}), ProtocolError);
    assert.throws(() => gt06Protocol.splitFrames(Buffer.from([0x78, 0x00]), {}), ProtocolError);
    const buffer = Buffer.concat([hex(LOGIN), Buffer.from('junk')]);
    const first = gt06Protocol.splitFrames(buffer, {});
    assert.equal(first.frames.length, 1);
    assert.throws(() => gt06Protocol.splitFrames(buffer.subarray(first.consumed), {}), ProtocolError);
  });

  it('rejects a bad CRC', () => {
    const frame = hex(GPS_LBS);
    frame[10] = frame[10]! ^ 0x01;
    assert.throws(() => gt06Protocol.decode(frame, {}, NOW), /bad CRC/);
  });

  it('refuses a frame whose length byte does not point at its trailer, after the frames before it', () => {
    const frame = hex(WRONG_LENGTH_WIFI);
    assert.throws(() => gt06Protocol.splitFrames(frame, {}), /length field does not point at a 0D0A trailer/);
    const buffer = Buffer.concat([hex(LOGIN), frame]);
    const first = gt06Protocol.splitFrames(buffer, {});
    assert.deepEqual(first.frames, [hex(LOGIN)]);
    assert.throws(() => gt06Protocol.splitFrames(buffer.subarray(first.consumed), {}), ProtocolError);
  });

  it('strips the trailing NULs of a long command reply in one pass', () => {
    const text = Buffer.concat([Buffer.from([0, 0, 0, 0, 1]), Buffer.from('OK'), Buffer.alloc(60_000)]);
    const message = gt06Protocol.decode(frame79(0x21, text), {}, NOW);
    assert.equal(message.statuses[0]?.attributes['result'], 'OK');
  });

  it('gives the same frames however the stream is chunked', () => {
    const stream = [LOGIN, GPS_LBS, STATUS, STRING_INFO_UTF16, ALARM_OVERSPEED].map(hex);
    assertSameFramesHoweverChunked(gt06Protocol, stream);
  });
});

describe('gt06 fuzzing', () => {
  it('never throws anything but ProtocolError on random bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), fc.boolean(), (bytes, withHeader) => {
      const input = withHeader ? Buffer.concat([Buffer.from([0x78, 0x78, bytes.length]), bytes]) : bytes;
      decodeStream(gt06Protocol, input);
    }), { numRuns: 1000 });
  });

  it('decodes random bodies of every message type within a valid frame safely', () => {
    const types = [0x01, 0x10, 0x12, 0x13, 0x15, 0x16, 0x19, 0x21, 0x22, 0x23, 0x26, 0x27, 0x8a, 0x55];
    fc.assert(fc.property(
      fc.constantFrom(...types), fc.uint8Array({ maxLength: 60 }), fc.integer({ min: 0, max: 0xffff }),
      (type, body, serial) => {
        const messages = decodeStream(gt06Protocol, frameWithCrc(type, body, serial));
        for (const message of messages) {
          assert.ok(message.ack === undefined || message.ack.readUInt16BE(0) === 0x7878);
        }
      },
    ), { numRuns: 2000 });
  });
});
