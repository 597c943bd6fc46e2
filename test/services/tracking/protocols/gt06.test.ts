import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { crc16X25 } from '../../../../src/services/tracking/protocols/checksum.ts';
import { gt06Protocol, gt06Response } from '../../../../src/services/tracking/protocols/gt06/decoder.ts';
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
const GPS_WITHOUT_SERIAL = '7878121011091c0b1b2999058508040097a89e0034520d0a';
const WRONG_LENGTH_WIFI = '787803691604130318491475905BD30E25001E10BBF7635D14759006E626560501CC0028660F213228660F1F2828660EA81E286610731428660F20140D0A';

// The serving cell, kept as Traccar's network object.
function cell(mobileCountryCode: number, mobileNetworkCode: number, locationAreaCode: number, cellId: number) {
  return { cellTowers: [{ mobileCountryCode, mobileNetworkCode, locationAreaCode, cellId }] };
}

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
    assert.deepEqual(position.attributes, { sat: 5, ignition: false, network: cell(246, 1, 110, 21978) });
    assert.deepEqual(message.ack, hex('787805120003903f0d0a'));
  });

  it('converts km/h to knots and reads the trailing odometer', () => {
    const message = decode(GPS_LBS_ODOMETER);
    const position = message.positions[0]!;
    assertFix(position, { time: '2015-08-27T18:29:55.000Z', valid: true, latitude: 16.63471, longitude: 80.96708 });
    assert.equal(roundTo(position.speed, 5), 17.27862);
    assert.equal(position.course, 258);
    assert.deepEqual(position.attributes, {
      sat: 11, ignition: true, odometer: 4320784, network: cell(404, 7, 470, 41241),
    });
    assert.deepEqual(message.ack, hex('787805120576caad0d0a'));
  });

  it('decodes 0x22 with ACC, upload mode and re-upload flags', () => {
    const message = decode(GPS_LBS_UTC);
    const position = message.positions[0]!;
    assertFix(position, { time: '2015-12-29T02:51:05.000Z', valid: true, latitude: 23.11169, longitude: 114.4093 });
    assert.deepEqual(position.attributes, {
      sat: 9, ignition: false, event: 0, archive: true, network: cell(460, 0, 10365, 8049),
    });
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
      network: cell(404, 70, 211, 49301),
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
  it('keeps an ICCID string message as an attribute, and its text as the answer to the command that asked', () => {
    const message = decode(STRING_ICCID);
    assert.deepEqual(message.statuses, [{ deviceTime: null, attributes: { iccid: '89882390000097302650', result: '<ICCID:89882390000097302650>' } }]);
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

describe('gt06 4G and model-specific types', () => {
  // Frames from Traccar's Gt06ProtocolDecoderTest; the places agree with the cells' country codes.
  const AZ735_LOCATION = '7979004a321106170c1b180cc900a875580b7ab4f00010350901fe0a007c0009112424007c000912240081004efe2100c500100f1200000000000000000000000000000000000000000000bc7c900d0a';
  const X1_GPS = '78783c3439000000120a0902093a07031f9e690529be2e00155500000016214901a30308b70000b3fb004aa82b059401a3422100000001000000007d9370b90d0a';
  const NEIGHBOUR_CELLS = '78783B2810010D02020201CC00287D001F713E287D001F7231287D001E232D287D001F4018000000000000000000000000000000000000FF00020005B14B0D0A';
  const MODULAR = '797900a87000000001020035000100003300125d62bf3a0800e804b5994308814a87001d5d00340006115d62bf29000011000a012e02620000000000000001000803537601000129800002000803102608593397620003000a8901260852293397626600180002017d002b000116002c00045d6278ea0009000108000a00010b002800010b002e00040000f0c1002a00010000290004000000be0030000a000100b4000a00b402d00006c5490d0a';

  it('answers an AZ735 0x7979 location with the 0x7979 acknowledgement', () => {
    const message = decode(AZ735_LOCATION);
    assertFix(message.positions[0]!, { time: '2017-06-23T12:27:24.000Z', valid: true, latitude: -6.13338, longitude: 106.99505 });
    assert.deepEqual(message.positions[0]!.attributes, {
      sat: 9, rssi: 36, status: 0, network: cell(510, 10, 124, 2321),
    });
    assert.deepEqual(message.ack, hex('797900053200bcedd10d0a'));
  });

  it('reads the X1 location with its odometer, driver and voltages, and does not answer it (as Traccar)', () => {
    const message = decode(X1_GPS);
    assertFix(message.positions[0]!, { time: '2018-10-09T02:09:58.000Z', valid: true, latitude: 29.11323, longitude: 48.12319 });
    assert.deepEqual(message.positions[0]!.attributes, {
      sat: 7, odometer: 1450313, network: { cellTowers: [{ mobileCountryCode: 419, mobileNetworkCode: 3, locationAreaCode: 2231, cellId: 46075 }] },
      driverUniqueId: '4892715', battery: 14.28, power: 4.19, input: 0, output: 1, adc1: 0, adc2: 0,
    });
    assert.equal(message.ack, undefined);
  });

  it('keeps neighbour cells as a status report with the device time and their signal', () => {
    const message = decode(NEIGHBOUR_CELLS);
    assert.deepEqual(message.positions, []);
    const [status] = message.statuses;
    assert.equal(status!.deviceTime!.toISOString(), '2016-01-13T02:02:02.000Z');
    const towers = (status!.attributes['network'] as { cellTowers: { cellId: number; signalStrength: number }[] }).cellTowers;
    assert.deepEqual(towers.map((tower) => [tower.cellId, tower.signalStrength]), [[8049, -62], [8050, -49], [7715, -45], [8000, -24]]);
    assert.deepEqual(message.ack, hex('78780528000500dd0d0a'));
  });

  it('takes the 0x70 fix from its location module, with altitude, and the other modules as attributes', () => {
    const message = decode(MODULAR);
    const position = message.positions[0]!;
    assertFix(position, { time: '2019-08-25T17:02:50.000Z', valid: true, latitude: 43.89451, longitude: -79.27275 });
    assert.equal(position.altitude, 232);
    assert.equal(position.attributes['iccid'], '89012608522933976266');
    assert.equal(position.attributes['hdop'], 1.1);
    assert.deepEqual(message.ack, hex('78780570000677670d0a'));
  });

  it('keeps a Wi-Fi report (no length, serial or CRC) with its access points and cells, answered with its time', () => {
    const message = decode(WRONG_LENGTH_WIFI);
    assert.equal(message.checksumMismatch, undefined);
    const [status] = message.statuses;
    assert.equal(status!.deviceTime!.toISOString(), '2016-04-13T03:18:49.000Z');
    const network = status!.attributes['network'] as { wifiAccessPoints: { macAddress: string }[]; cellTowers: unknown[] };
    assert.deepEqual(network.wifiAccessPoints.map((accessPoint) => accessPoint.macAddress),
      ['14:75:90:5b:d3:0e', '00:1e:10:bb:f7:63', '14:75:90:06:e6:26']);
    assert.equal(network.cellTowers.length, 5);
    assert.deepEqual(message.ack, hex('78780069160413031849 0d0a'.replace(/ /g, '')));
  });

  it('answers an address request with Traccar\'s "no address" 0x97 frame', () => {
    const message = gt06Protocol.decode(frameWithCrc(0x2a, Buffer.alloc(30), 4), {}, NOW);
    assert.deepEqual(message.positions, []);
    assert.equal(message.ack!.readUInt16BE(0), 0x7979);
    assert.equal(message.ack![4], 0x97);
    assert.equal(message.ack!.subarray(10, 21).toString('latin1'), 'NA&&NA&&0##');
  });

  it('reads the 0xA9 Wi-Fi alarm: 4G cells when flagged, access points, and the alarm code with its high bits', () => {
    const body = Buffer.concat([
      hex('180506070809'), // 2024-05-06 07:08:09
      hex('00f6' + '01'), // MCC 246, MNC 1
      hex('01' + '01'), // 4G cells, one of them
      hex('0000006e' + '00000000000055da' + '3c'), // LAC 110, cell 21978, signal 60
      hex('00'), // timing advance
      hex('01' + '112233445566' + '28'), // one access point
      hex('01' + '00'), // alarm 01 (sos), language without high bits
    ]);
    const message = gt06Protocol.decode(frameWithCrc(0xa9, body, 9), {}, NOW);
    assert.deepEqual(message.statuses, [{
      deviceTime: new Date('2024-05-06T07:08:09Z'),
      attributes: {
        network: {
          cellTowers: [{ mobileCountryCode: 246, mobileNetworkCode: 1, locationAreaCode: 110, cellId: 21978, signalStrength: -60 }],
          wifiAccessPoints: [{ macAddress: '11:22:33:44:55:66', signalStrength: 40 }],
        },
        alarm: 'sos',
      },
    }]);
    assert.deepEqual(message.ack, gt06Response(0xa9, 9));
  });

  it('reads the OBD values of 0x8C', () => {
    // Traccar's Gt06ProtocolDecoderTest (FM08ABC).
    const message = decode('797900cd8c15010d08200d013137333d302c3232333d312c3238333d30303032373464382c3436333d30303030303239352c3437333d30303030363333622c3438333d30303030303036372c3242333d30303030303030302c3244333d30303030316332302c3335333d30303030323133342c3336333d30303033626430382c3339333d30303030303336622c3330333d30303030303539362c3439333d30303030306563382c3441333d2c3341333d30303030303430352c3530333d30303030cb03850c3603c025af5414a6003fc5940d0a');
    assert.deepEqual(message.statuses[0]!.attributes, {
      ignition: true, odometer: 1609.84, fuelUsed: 254.03, fuel: 0, coolantTemp: 72, obdSpeed: 85, rpm: 2450, hours: 37.84,
    });
  });

  it('gives nothing and no answer for our own acknowledgement echoed back, or a stub', () => {
    assert.deepEqual(decode('787805120099abec0d0a'), { positions: [], statuses: [] });
    assert.deepEqual(decode('787801080d0a'), { positions: [], statuses: [], checksumMismatch: true });
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

  it('keeps a frame with a bad CRC, flagged as a mismatch, and still acknowledges it', () => {
    assert.equal(decode(GPS_LBS).checksumMismatch, undefined);
    const frame = hex(GPS_LBS);
    frame[frame.length - 3] = frame[frame.length - 3]! ^ 0x01;
    const message = gt06Protocol.decode(frame, {}, NOW);
    assert.equal(message.checksumMismatch, true);
    assert.deepEqual(message.positions, decode(GPS_LBS).positions);
    assert.deepEqual(message.ack, decode(GPS_LBS).ack);
  });

  it('cuts a frame whose length field misses its trailer at the first 0D0A, as Traccar does', () => {
    const frame = hex(WRONG_LENGTH_WIFI);
    const buffer = Buffer.concat([hex(LOGIN), frame, hex(STATUS)]);
    assert.deepEqual(gt06Protocol.splitFrames(buffer, {}).frames, [hex(LOGIN), frame, hex(STATUS)]);
    // Until the trailer arrives the frame is waited for.
    assert.deepEqual(gt06Protocol.splitFrames(frame.subarray(0, 30), {}), { frames: [], consumed: 0 });
  });

  it('decodes a location whose length field is one byte short and which has no serial and CRC, flagged', () => {
    // Traccar's Gt06ProtocolDecoderTest: a 0x10 frame sent without serial and CRC by its firmware.
    const message = decode(GPS_WITHOUT_SERIAL);
    assert.equal(message.checksumMismatch, true);
    assertFix(message.positions[0]!, {
      time: '2017-09-28T11:27:41.000Z', valid: true, latitude: 51.4469, longitude: 5.52172,
    });
  });

  it('refuses a frame with no 0D0A within the longest frame its header allows, after the frames before it', () => {
    const runaway = Buffer.concat([Buffer.from([0x78, 0x78, 0x05, 0x12]), Buffer.alloc(300, 0x11)]);
    assert.throws(() => gt06Protocol.splitFrames(runaway, {}), /no 0D0A trailer/);
    const buffer = Buffer.concat([hex(LOGIN), runaway]);
    const first = gt06Protocol.splitFrames(buffer, {});
    assert.deepEqual(first.frames, [hex(LOGIN)]);
    assert.throws(() => gt06Protocol.splitFrames(buffer.subarray(first.consumed), {}), ProtocolError);
  });

  it('strips the trailing NULs of a long command reply in one pass', () => {
    const text = Buffer.concat([Buffer.from([0, 0, 0, 0, 1]), Buffer.from('OK'), Buffer.alloc(60_000)]);
    const message = gt06Protocol.decode(frame79(0x21, text), {}, NOW);
    assert.equal(message.statuses[0]?.attributes['result'], 'OK');
  });

  it('gives the same frames however the stream is chunked, sloppy lengths included', () => {
    const stream = [LOGIN, GPS_LBS, STATUS, GPS_WITHOUT_SERIAL, STRING_INFO_UTF16, WRONG_LENGTH_WIFI, ALARM_OVERSPEED].map(hex);
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
