import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { gl200Heartbeat, gl200Location } from '../../../../src/services/tracking/protocols/gl200/simulator.ts';
import { gl200Commands, gl200Protocol } from '../../../../src/services/tracking/protocols/gl200/decoder.ts';
import type { CommandType } from '../../../../src/services/tracking/protocols/command-types.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW, assertCoordinates, assertSameFramesHoweverChunked, decodeOne, decodeStream, hex, onlyPositionOf, textDecoders } from './protocol-test-helpers.ts';

// Frames published in Traccar's Gl200TextProtocolDecoderTest and Gl200FrameDecoderTest.
const FRI_TWO = '+RESP:GTFRI,020102,135790246811220,,0,0,2,1,4.3,92,70.0,121.354335,31.222073,20090214013254,0460,0000,18d8,6141,00,0,4.3,92,70.0,121.354335,31.222073,20090101000000,0460,0000,18d8,6141,00,,20090214093254,11F0$';
const FRI_STATUS = '+RESP:GTFRI,060228,862894020178276,,15153,10,1,1,0.0,0,431.7,-63.169571,-17.776235,20160210153458,0736,0003,6AD4,80EF,00,34.9,00117:31:26,13442,15163,0,210101,,,,20160210113503,38EE$';
const ERI = '+RESP:GTERI,F10413,862599050544301,GV350M,00000002,14164,10,1,1,98.2,93,216.4,-117.484369,33.896640,20240919020058,0311,0480,2C01,00ADBA01,,39539.5,,,100,220100,,0,20240919020058,20A7$';
const SOS = '+RESP:GTSOS,DF0200,868487004358800,cv100,,00,1,1,0.0,0,138.0,114.015465,22.537372,20210714115224,0460,0001,25F8,061A7D02,,,20210714195224,20210714195224,03A6$';
const IGN = '+RESP:GTIGN,060228,862894020180553,,9860,0,0.2,189,420.0,-63.158195,-17.800608,20160309022951,0736,0003,6AD4,3471,00,,881.2,20160308222956,129A$';
const INF = '+RESP:GTINF,6E0202,868589060187625,RA82,11,89883030000091225018,41,0,1,12349,,4.15,0,1,0,0,20240328231013,0,0,0,0,00,00,+0000,0,20240328231015,7D4F$';
const PNA = '+RESP:GTPNA,710402,867292060140006,,2,20250516120427,0121$';
const HBD = '+ACK:GTHBD,1A0401,135790246811220,,20100214093254,11F0$';
const RTO = '+ACK:GTRTO,1A0800,860599000773978,GL300,VER,FFFF,20161006053520,0C19$';
const BINARY_EVT = '2b4556540c00fc1fbf005c4501010108563254030003430564312a41090100000000003f007dff75a11a025c6a7807e1070a14041202680003189c1ac500000000000000000000000000000000000007e1070b041134054e5c6e0d0a';

const { decodeText, onlyPosition } = textDecoders(gl200Protocol);

describe('gl200 reports', () => {
  it('turns each fix of a GTFRI report into a position, attributes on the last, speed from km/h', () => {
    const message = decodeText(FRI_TWO);
    assert.equal(message.uniqueId, '135790246811220');
    assert.deepEqual(message.positions.map((position) => position.fixTime.toISOString()), ['2009-02-14T01:32:54.000Z', '2009-01-01T00:00:00.000Z']);
    for (const position of message.positions) {
      assert.equal(position.valid, true);
      assertCoordinates(position, 31.222073, 121.354335);
      assert.ok(Math.abs(position.speed - 4.3 / 1.852) < 1e-9);
      assert.deepEqual([position.course, position.altitude, position.attributes['type']], [92, 70, 'FRI']);
    }
    assert.equal(message.ack, undefined);
  });

  it('reads power, odometer, engine hours, analog inputs and the status word of a GV300 GTFRI', () => {
    const position = onlyPosition(FRI_STATUS);
    assert.deepEqual(position.attributes, {
      hdop: 1, power: 15.153, odometer: 34_900, hours: (117 * 3600 + 31 * 60 + 26) * 1000, adc1: '13442', adc2: '15163', batteryLevel: 0,
      ignition: true, input: 1, in1: false, in2: false, output: 1, out1: true, out2: false, type: 'FRI',
    });
    // Traccar's layout lets its catch-all swallow the send time, so the device time is the fix time, as there.
    assert.equal(position.deviceTime?.toISOString(), '2016-02-10T15:34:58.000Z');
  });

  it('decodes GTERI, GTIGN and the alarm reports Traccar maps', () => {
    const eri = onlyPosition(ERI);
    assertCoordinates(eri, 33.89664, -117.484369);
    assert.deepEqual([eri.attributes['power'], eri.attributes['odometer'], eri.attributes['batteryLevel'], eri.attributes['ignition']], [14.164, 39_539_500, 100, true]);
    const ign = onlyPosition(IGN);
    assert.deepEqual([ign.attributes['ignition'], ign.attributes['odometer'], ign.attributes['type']], [true, 881_200, 'IGN']);
    const sos = onlyPosition(SOS);
    assert.deepEqual([sos.attributes['alarm'], sos.fixTime.toISOString()], ['sos', '2021-07-14T11:52:24.000Z']);
  });

  it('keeps reports without a fix as attributes of the last known position', () => {
    const inf = decodeText(INF);
    assert.deepEqual(inf.positions, []);
    assert.equal(inf.statuses[0]!.deviceTime?.toISOString(), '2024-03-28T23:10:15.000Z');
    assert.deepEqual([inf.statuses[0]!.attributes['power'], inf.statuses[0]!.attributes['iccid']], [12.349, '89883030000091225018']);
    assert.deepEqual(decodeText(PNA).statuses, [{ deviceTime: new Date('2025-05-16T12:04:27Z'), attributes: { alarm: 'powerOn', type: 'PNA' } }]);
  });

  it('answers a heartbeat with +SACK and keeps a command answer as its result', () => {
    const heartbeat = decodeText(HBD);
    assert.deepEqual(heartbeat, { uniqueId: '135790246811220', positions: [], statuses: [], ack: Buffer.from('+SACK:GTHBD,1A0401,11F0$') });
    assert.deepEqual(decodeText(RTO), {
      uniqueId: '860599000773978', positions: [], statuses: [{ deviceTime: new Date('2016-10-06T05:35:20Z'), attributes: { result: '+ACK:GTRTO' } }],
    });
  });

  it('refuses a report whose fields are malformed where Traccar\'s parsing fails', () => {
    assert.throws(() => decodeText('+RESP:GTIGN,060228,862894020180553,,9860,0,0.2,x89,420.0,-63.158195,-17.800608,20160309022951,0736,0003,6AD4,3471,00,,881.2,20160308222956,129A$'), ProtocolError);
    assert.throws(() => decodeText('+RESP:GTERI,F10413,862599050544301$'), ProtocolError);
  });
});

describe('gl200 binary reports', () => {
  const RECORDS = '2b000038000865134050947226820300030000216a3ed6f101895000521629fa8b28f402ac1a8e6a3ed6f100001600000010f505010ff824';

  it('decodes +EVT and +RSP fixes (0.1 km/h, millivolts) and the tagged records of the newer frames', () => {
    const event = onlyPositionOf(gl200Protocol, hex(BINARY_EVT));
    assert.deepEqual([event.fixTime.toISOString(), event.valid], ['2017-07-10T20:04:18.000Z', false]);
    assertCoordinates(event, 39.611, -9.068262);
    assert.deepEqual(event.attributes, { versionFw: '264', batteryLevel: 100, power: 12.586, sat: 9, hdop: 0 });
    const record = decodeOne(gl200Protocol, hex(RECORDS));
    assert.equal(record.uniqueId, '865134050947226');
    assertCoordinates(record.positions[0]!, 44.833422, -91.543308);
    assert.deepEqual([record.positions[0]!.valid, record.positions[0]!.attributes], [true, { hdop: 2.2, sat: 5 }]);
  });

  it('refuses a record whose length would not move past itself', () => {
    const frame = hex(RECORDS);
    frame[19] = 0; // the first record's length
    assert.throws(() => gl200Protocol.decode(frame, {}, NOW), ProtocolError);
  });
});

describe('gl200 framing', () => {
  it('splits text reports at $, binary ones by their length, and refuses garbage', () => {
    const fix = { time: new Date('2024-01-01T10:00:00Z'), latitude: -33.5, longitude: -70.25, altitude: 500, speed: 20, course: 181, valid: true, odometer: 5000 };
    const stream = [Buffer.from(FRI_TWO), hex(BINARY_EVT), gl200Location('860599000773978', fix), gl200Heartbeat('860599000773978', fix.time)];
    assertSameFramesHoweverChunked(gl200Protocol, stream);
    assert.throws(() => gl200Protocol.splitFrames(Buffer.from('GET / HTTP/1.1\r\n'), {}), ProtocolError);
    assert.throws(() => gl200Protocol.splitFrames(Buffer.from(`+RESP:GTFRI,${'0'.repeat(5000)}`), {}), ProtocolError);
  });

  it('decodes what the simulator writes', () => {
    const fix = { time: new Date('2024-01-01T10:00:00Z'), latitude: -33.5, longitude: -70.25, altitude: 500, speed: 20, course: 181, valid: true, sos: true, odometer: 5000 };
    const position = onlyPositionOf(gl200Protocol, gl200Location('860599000773978', fix));
    assertCoordinates(position, -33.5, -70.25);
    assert.ok(Math.abs(position.speed - 20) < 0.1);
    assert.deepEqual([position.fixTime.toISOString(), position.course, position.altitude, position.attributes['alarm']], [fix.time.toISOString(), 181, 500, 'sos']);
    const invalid = decodeOne(gl200Protocol, gl200Location('860599000773978', { ...fix, valid: false, sos: false }));
    assert.deepEqual([invalid.positions.length, invalid.statuses[0]!.attributes['odometer']], [0, 5000]);
  });
});

describe('gl200 expression layouts on hostile reports', () => {
  // Traccar's GTFRI expression, with its ambiguous location block repeated, backtracks exponentially in the number of
  // fixes on a report that fails to match: 30 fixes and a bad field took hours. Ours matches such a block one way only.
  const fix = '1,0.0,0,1.0,1.000000,1.000000,20200101000000,0460,0000,1234,5678,00,';

  it('gives up on a failing report of many fixes at once, and still decodes the well-formed one', () => {
    const report = (tail: string) => Buffer.from(`+RESP:GTFRI,1A0800,860599000773978,,0,0,30,${fix.repeat(30)}${tail}$`, 'latin1');
    // As in Traccar, a report the layout refuses falls back to the scan for the first fix.
    assert.equal(gl200Protocol.decode(report('zz,20200101000000,00G1'), {}, NOW).positions.length, 1);
    assert.equal(gl200Protocol.decode(report('90,20200101000000,0001'), {}, NOW).positions.length, 30);
  });
});

describe('gl200 commands', () => {
  const context = { uniqueId: '860599000773978', sequence: 1, now: NOW };
  const encode = (type: CommandType, attributes: Record<string, unknown> = {}) => gl200Commands.encode({ type, attributes }, context).toString('latin1');

  it('encodes Traccar\'s AT+GT commands with the default device password', () => {
    assert.equal(encode('positionSingle'), 'AT+GTRTO=gl200,1,,,,,,FFFF$');
    assert.equal(encode('engineStop'), 'AT+GTOUT=gl200,1,,,0,0,0,0,0,0,0,,,,,,,FFFF$');
    assert.equal(encode('engineResume'), 'AT+GTOUT=gl200,0,,,0,0,0,0,0,0,0,,,,,,,FFFF$');
    assert.equal(encode('rebootDevice'), 'AT+GTRTO=gl200,3,,,,,,FFFF$');
    assert.equal(encode('custom', { data: 'AT+GTFRI=gl200,1,,,,,,30,30,,,,,,,,FFFF' }), 'AT+GTFRI=gl200,1,,,,,,30,30,,,,,,,,FFFF$');
  });

  it('refuses what the devices cannot take', () => {
    assert.throws(() => encode('custom', { data: 'AT+GTRTO=gl200,1$AT+GTRTO=gl200,3$' }), ProtocolError);
    assert.throws(() => encode('custom', { data: 'hello' }), ProtocolError);
    assert.throws(() => encode('alarmArm'), ProtocolError);
  });
});

describe('gl200 fuzzing', () => {
  it('finds no position in a report of random fields and never throws anything but ProtocolError', () => {
    const types = ['FRI', 'ERI', 'IGN', 'SOS', 'INF', 'CAN', 'OBD', 'STT', 'HBM', 'LBS', 'DAT', 'PNA', 'BAA'];
    fc.assert(fc.property(fc.constantFrom(...types), fc.array(fc.string({ maxLength: 8 }), { maxLength: 60 }), (type, fields) => {
      const body = fields.join(',').replace(/[$\0\r\n]/g, '');
      const messages = decodeStream(gl200Protocol, Buffer.from(`+RESP:GT${type},1A0800,860599000773978,${body}$`, 'latin1'));
      assert.ok(messages.every((message) => message.positions.length === 0));
    }), { numRuns: 2000 });
  });
});
