import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { suntechLocation } from '../../../../src/services/tracking/protocols/suntech/simulator.ts';
import { suntechCommands, suntechProtocol } from '../../../../src/services/tracking/protocols/suntech/decoder.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW, assertCoordinates, assertSameFramesHoweverChunked, decodeStream, hex, assertFix, textDecoders } from './protocol-test-helpers.ts';

// Reports published in Traccar's SuntechProtocolDecoderTest (its default settings: no HBM, no ADC/RPM/temperature).
const SA200 = 'SA200STT;317652;042;20120718;15:37:12;16d41;-15.618755;-056.083241;000.024;000.00;8;1;41548;12.17;100000;2;1979\r';
const ST300 = 'ST300STT;007238270;40;313;20190220;12:05:04;c99e48;+04.644623;-074.076922;010.390;202.77;20;1;997100;14.10;100000;2;8384;003634;4.1;1\r';
const ST600 = 'ST600STT;008084783;20;419;20180308;18:00:36;0032cc3e;736;3;445c;41;-16.530023;-068.084267;018.640;267.99;10;1;11655;13.33;100000;2;0336;000061;4.5;0;0.00\r';
const ST500 = 'ST500STT;205450135;07;843;20170816;23:24:45;+19.338432;-099.179817;000.283;000.00;6;1;141121;12.89;0;0;1;4659;002.795;0;001.891;611;4.0\r';
const EMERGENCY = 'SA200EMG;317652;042;20120718;15:35:41;16d41;-15.618740;-056.083252;000.034;000.00;8;1;41548;12.17;110000;1\r';
const UEX = 'ST300UEX;511331307;45;311;20210420;12:41:01;12361;-01.280825;-047.931773;000.000;000.00;16;1;0;12.54;000000;23;GTSL|6|1|0|9255143|2|;6F;000276;0.0;1;00000000000000;0\r';
const ST910 = 'ST910;Emergency;205283272;500;20150716;19:12:01;-23.659019;-046.695403;000.602;000.00;0;4.2;1;1;02;10820;2fdb090736;724;05;0;2311;255;0;100\r';
// The five reports Traccar's test decodes with suntech.protocolType 1 (ST910 with the serving cell and the odometer).
const ST910_CELL: readonly [report: string, time: string, latitude: number, longitude: number, odometer: number, alarm?: string][] = [
  ['ST910;Location;907510186;552;20180504;23:15:45;3af54e5331;+19.301833;-099.190657;000.246;000.00;1;28462;80;1;0;0423;02;334;05;-215;20051;1;4;100', '2018-05-04T23:15:45.000Z', 19.301833, -99.190657, 28462],
  ['ST910;Alert;485195;20170409;22:37:41;3be0133057;+24.882410;-107.509152;000.070;000.00;1;286734;72;02;295;05;-415;4912;255;10;10', '2017-04-09T22:37:41.000Z', 24.88241, -107.509152, 286734, 'general'],
  ['ST910;Location;485195;528;20170410;01:18:57;f1dd134840;+24.787139;-107.434679;000.020;000.00;1;286734;100;1;0;0188;02;295;05;-339;4936;255;4;74', '2017-04-10T01:18:57.000Z', 24.787139, -107.434679, 286734],
  ['ST910;Location;560266;500;20161207;21:33:11;af910be101;-25.504234;-049.278003;000.080;000.00;1;10054889;70;1;1;1311;02;724;06;-317;3041;2;10;92', '2016-12-07T21:33:11.000Z', -25.504234, -49.278003, 10054889],
  ['ST910;Emergency;238569;528;20170403;00:02:09;7574160020;+19.661292;-099.144473;000.176;000.00;1;228638;1', '2017-04-03T00:02:09.000Z', 19.661292, -99.144473, 228638, 'general'],
];
const UNIVERSAL = 'STT;100850000;3FFFFF;26;010;1;20161117;08:37:39;0000004F;450;0;0014;20;+37.479323;+126.887827;62.03;65.43;10;1;00000101;00001000;1;2;0492\r';
const UNIVERSAL_ALT = 'ALT;0950030205;3FFFFF;95;1.0.11;0;20221017;21:41:30;02F2F402;334;20;0F1D;45;+25.791061;-100.170745;0.00;0.00;18;1;00000101;00000000;42;2;\r';
const RESULT = 'RES;4309999001;04;02;TEST\r';
const ZIP = '02003210511340877028813f180c170016041051290c0635652d793653000038001a30e601665e560000000100750002712704000103';

const { decodeText, onlyPosition } = textDecoders(suntechProtocol);

describe('suntech text reports', () => {
  it('decodes SA200/ST300/ST500/ST600 STT: UTC time, coordinates, km/h, I/O, odometer, power; no answer', () => {
    const message = decodeText(SA200);
    assert.equal(message.uniqueId, '317652');
    assert.equal(message.ack, undefined);
    const position = message.positions[0]!;
    assertFix(position, '2012-07-18T15:37:12.000Z', true, -15.618755, -56.083241);
    assert.ok(Math.abs(position.speed - 0.024 / 1.852) < 1e-9);
    assert.deepEqual(position.attributes, {
      type: 'STT', versionFw: '042', sat: 8, odometer: 41548, power: 12.17, ignition: true, in1: false, in2: false, in3: false,
      out1: false, out2: false, status: 2, index: 1979,
    });
    const st300 = onlyPosition(ST300);
    assert.equal(st300.fixTime.toISOString(), '2019-02-20T12:05:04.000Z');
    assert.equal(st300.course, 202.77);
    assertCoordinates(onlyPosition(ST600), -16.530023, -68.084267);
    assertCoordinates(onlyPosition(ST500), 19.338432, -99.179817);
  });

  it('maps emergencies and alerts, reads UEX serial data and ST910 reports', () => {
    assert.equal(onlyPosition(EMERGENCY).attributes['alarm'], 'sos');
    assert.equal(onlyPosition(UEX).attributes['driverUniqueId'], '9255143');
    const st910 = onlyPosition(ST910);
    assert.deepEqual([st910.fixTime.toISOString(), st910.attributes['alarm']], ['2015-07-16T19:12:01.000Z', 'general']);
    assertCoordinates(st910, -23.659019, -46.695403);
    assert.equal(st910.attributes['versionFw'], '500');
    assert.equal(st910.attributes['odometer'], undefined);
  });

  it('tells the ST910 layout with the serving cell and odometer (Traccar\'s protocolType 1) by its fields', () => {
    for (const [report, time, latitude, longitude, odometer, alarm] of ST910_CELL) {
      const position = onlyPosition(`${report}\r`);
      assertFix(position, time, true, latitude, longitude);
      assert.deepEqual([position.attributes['odometer'], position.attributes['alarm']], [odometer, alarm], report);
    }
    // An alert of that layout carries no firmware.
    assert.equal(onlyPosition(`${ST910_CELL[1]![0]}\r`).attributes['versionFw'], undefined);
    assert.equal(onlyPosition(`${ST910_CELL[0]![0]}\r`).attributes['versionFw'], '552');
  });

  it('decodes the universal form by its field mask, alerts included, and keeps RES answers as results', () => {
    const position = onlyPosition(UNIVERSAL);
    assert.equal(position.fixTime.toISOString(), '2016-11-17T08:37:39.000Z');
    assertCoordinates(position, 37.479323, 126.887827);
    assert.deepEqual([position.attributes['ignition'], position.attributes['input'], position.attributes['output'], position.attributes['sat']], [true, 101, 1000, 10]);
    assert.equal(onlyPosition(UNIVERSAL_ALT).attributes['alarm'], 'sos');
    assert.deepEqual(decodeText(RESULT).statuses, [{ deviceTime: null, attributes: { type: 'RES', result: '04;02;TEST' } }]);
  });

  it('decodes the compressed binary report', () => {
    const message = suntechProtocol.decode(hex(ZIP), {}, NOW);
    assert.equal(message.uniqueId, '511340877');
    const position = message.positions[0]!;
    assert.equal(position.fixTime.toISOString(), '2024-12-23T00:22:04.000Z');
    assertCoordinates(position, -12.063565, -45.793653);
  });
});

describe('suntech framing, commands and fuzzing', () => {
  it('ends text reports at a lone carriage return, binary ones by length, and refuses garbage', () => {
    const stream = Buffer.from(`${SA200}RES;1;line one\r\nline two\r${ST300}`, 'latin1');
    const { frames } = suntechProtocol.splitFrames(stream, {});
    assert.deepEqual(frames.map((frame) => frame.toString('latin1')), [SA200, 'RES;1;line one\r\nline two\r', ST300]);
    assert.throws(() => suntechProtocol.splitFrames(Buffer.from('GET / HTTP/1.1\r\n'), {}), ProtocolError);
    assert.throws(() => suntechProtocol.splitFrames(Buffer.from(`STT;${'1'.repeat(5000)}`), {}), ProtocolError);
    const fix = { time: new Date('2024-01-01T10:00:00Z'), latitude: -33.5, longitude: -70.25, altitude: 0, speed: 20, course: 181, valid: true, ignition: true, sos: true, odometer: 5000 };
    assertSameFramesHoweverChunked(suntechProtocol, [Buffer.from(SA200), suntechLocation('511300001', fix), Buffer.from(UNIVERSAL)]);
    const position = onlyPosition(suntechLocation('511300001', fix).toString('latin1'));
    assert.equal(position.fixTime.toISOString(), fix.time.toISOString());
    assertCoordinates(position, -33.5, -70.25);
    assert.ok(Math.abs(position.speed - 20) < 0.01);
    assert.deepEqual([position.course, position.attributes['ignition'], position.attributes['alarm'], position.attributes['odometer']], [181, true, 'sos', 5000]);
  });

  it('encodes Traccar\'s legacy commands', () => {
    const context = { uniqueId: '511300001', sequence: 1, now: NOW };
    const encode = (type: 'rebootDevice' | 'engineStop' | 'outputControl' | 'custom', attributes: Record<string, unknown> = {}) =>
      suntechCommands.encode({ type, attributes }, context).toString('latin1');
    assert.equal(encode('rebootDevice'), 'SA200CMD;511300001;02;Reboot\r');
    assert.equal(encode('engineStop'), 'SA200CMD;511300001;02;Enable1\r');
    assert.equal(encode('outputControl', { index: 2, data: '0' }), 'SA200CMD;511300001;02;Disable2\r');
    assert.throws(() => encode('custom'), ProtocolError);
  });

  it('decodes random and mutated reports safely', () => {
    const field = fc.oneof(fc.constantFrom('', '1', '0', '20240101', '12:00:00', '+12.5', 'FFFFFF', '100000'), fc.stringMatching(/^-?\d{0,9}(\.\d{0,6})?$/), fc.string({ maxLength: 6 }));
    fc.assert(fc.property(fc.constantFrom('ST300STT', 'SA200EMG', 'ST600UEX', 'ST910', 'ST400STT', 'STT', 'ALT', 'UEX', 'BLE', 'RES'), fc.array(field, { maxLength: 30 }), (prefix, fields) => {
      decodeStream(suntechProtocol, Buffer.from(`${prefix};${fields.join(';').replace(/\r/g, '')}\r`, 'latin1'));
    }), { numRuns: 2000 });
    const reports = [SA200, ST600, UEX, UNIVERSAL, ST910, `${ST910_CELL[1]![0]}\r`].map((report) => Buffer.from(report, 'latin1'));
    fc.assert(fc.property(fc.constantFrom(...reports), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0x20, max: 0x7e })), { minLength: 1, maxLength: 6 }), (report, changes) => {
      const mutated = Buffer.from(report);
      for (const [index, value] of changes) mutated[index % (mutated.length - 1)] = value;
      decodeStream(suntechProtocol, mutated);
    }), { numRuns: 2000 });
    fc.assert(fc.property(fc.uint8Array({ maxLength: 120 }), fc.constantFrom(0x02, 0x81, 0x82), (bytes, type) => {
      decodeStream(suntechProtocol, Buffer.concat([Buffer.from([type, 0, bytes.length]), bytes, Buffer.from([0])]));
    }), { numRuns: 2000 });
  });
});
