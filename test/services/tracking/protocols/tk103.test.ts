import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { tk103Location, tk103Login } from '../../../../src/services/tracking/protocols/tk103/simulator.ts';
import { tk103Commands, tk103Protocol } from '../../../../src/services/tracking/protocols/tk103/decoder.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW, assertCoordinates, assertSameFramesHoweverChunked, decodeStream, assertFix, textDecoders } from './protocol-test-helpers.ts';

// Frames published in Traccar's Tk103ProtocolDecoderTest.
const BR00 = '(088047365460BR00151024A2555.3531S02855.3329E004.7055148276.1701000000L00009AA3)';
const BR00_FLAGS = '(088048003342BR00150917A1352.9801N10030.9050E000.0103224000.0000010000L000003F9)';
const BP05 = '(088048003342BP05354188048003342150917A1352.9801N10030.9050E000.0103115265.5600010000L000003F9)';
const BP05_COMMAS = '(352606090042050,BP05,240414,A,4527.3513N,00909.9758E,4.80,112825,155.49)';
const ZC17_COMMAS = '(864768011069660,ZC17,250517,A,3211.7118N,03452.8086E,0.68,115525,208.19,64.50,9)';
const ALARM = '(044027395704BQ81,ALARM,1,164,151101A2238.5237N11349.4571E0.7031241010.0000,00000000)';
const BO01_ROLLOVER = '(013612345678BO012061830A2934.0133N10627.2544E040.0080331309.6200000000L000770AD)';
const SPACES = '(027023361470BR00200617A4000.5775N 8415.4076W 46.0173725 87.3101000000L00000000)';
const BP00 = '(027044702512BP00027044702512HSO01A4)';
const BATTERY = '(013632651491,ZC20,040613,040137,6,421,112,0)';
const RESULT = '(864555555555555,ZC03,191117,234207,$Notice: (version) 1.0$)';
const VIN = '(027023361470BV005J6RW2H53HL066029)';
const CELLS = '(027046434858BZ00,{460,0,20949,58711}\n{460,0,20494,54003}\n,01000000)';
const BMS_PAIRS = '(007030201454BS5190:02150000753001DC,91:0EE8060EDC0A01DC,92:42014201DC0A01DC,93:00010127000037C8,94:0E01000002000000,95:020EE10EE20EE800030EE40EE00EE700040EDD0EE40EE400050EDC0EDF0EE400,96:0142000000000000,97:0000000000000000,98:0000000000000000)';
const BMS_BLOCK = '(352602014867BS500064FF0EF10FF10FF00FF20FF30FF20FF20FF40FF20FF40FF40FF20FF30FF20F0000000000000000000000000000000000000000000000001663000000010004000000000000000002444444420000000000A00FA000000000000000200000000315E2000000)';

const { decodeText, onlyPosition } = textDecoders(tk103Protocol);

describe('tk103 locations', () => {
  it('decodes the compact BR00 report: yymmdd, km/h to knots, course, I/O, fuel and odometer in hex', () => {
    const message = decodeText(BR00);
    assert.equal(message.uniqueId, '088047365460');
    assert.equal(message.ack, undefined);
    const position = message.positions[0]!;
    assertFix(position, '2015-10-24T05:51:48.000Z', true, -25.92255, 28.92222);
    assert.ok(Math.abs(position.speed - 4.7 / 1.852) < 1e-9);
    assert.equal(position.course, 276.17);
    assert.deepEqual(position.attributes, { charge: true, ignition: true, in2: 0, panic: 0, out2: 0, fuel: 0, odometer: 0x9aa3 });
    assert.equal(onlyPosition(BR00_FLAGS).attributes['hs3'], 1);
  });

  it('answers BP05 with AP05 and decodes its location after the IMEI', () => {
    const message = decodeText(BP05);
    assert.deepEqual(message.ack, Buffer.from('(088048003342AP05)'));
    assert.equal(message.positions[0]!.fixTime.toISOString(), '2015-09-17T10:31:15.000Z');
    assertCoordinates(message.positions[0]!, 13.883, 100.515083);
  });

  it('decodes the comma-separated form with ddmmyy, and its alarm types', () => {
    const position = onlyPosition(BP05_COMMAS);
    assert.equal(position.fixTime.toISOString(), '2014-04-24T11:28:25.000Z');
    assertCoordinates(position, 45.45586, 9.16626);
    assert.equal(position.course, 155.49);
    assert.equal(onlyPosition(ZC17_COMMAS).attributes['alarm'], 'removing');
    assert.equal(decodeText(BP05_COMMAS).ack, undefined, 'Traccar answers only the compact BP05');
  });

  it('reads ALARM reports, spaces in coordinates and speed, and rolls a month past December over as Traccar does', () => {
    const alarm = onlyPosition(ALARM);
    assert.equal(alarm.attributes['alarm'], 'overspeed');
    assert.equal(alarm.fixTime.toISOString(), '2015-11-01T12:41:01.000Z');
    const spaced = onlyPosition(SPACES);
    assertCoordinates(spaced, 40.009625, -84.256793);
    assert.equal(spaced.fixTime.toISOString(), '2020-06-17T17:37:25.000Z');
    const rolled = onlyPosition(BO01_ROLLOVER);
    assert.equal(rolled.fixTime.toISOString(), '2007-06-30T08:03:31.000Z');
    assert.equal(rolled.attributes['alarm'], 'sos');
  });
});

describe('tk103 other messages', () => {
  it('answers the BP00 handshake with AP01HSO, storing nothing', () => {
    assert.deepEqual(decodeText(BP00), { positions: [], statuses: [], uniqueId: '027044702512', ack: Buffer.from('(027044702512AP01HSO)') });
  });

  it('keeps battery, command results (with a ) in the free text), VIN and cell reports as statuses', () => {
    assert.deepEqual(decodeText(BATTERY).statuses, [{ deviceTime: new Date('2013-06-04T04:01:37.000Z'), attributes: { batteryLevel: 100, battery: 4.21, power: 11.2 } }]);
    assert.deepEqual(decodeText(RESULT).statuses, [{ deviceTime: new Date('2017-11-19T23:42:07.000Z'), attributes: { result: 'Notice: (version) 1.0' } }]);
    assert.deepEqual(decodeText(VIN).statuses, [{ deviceTime: null, attributes: { vin: '5J6RW2H53HL066029' } }]);
    assert.deepEqual(decodeText(CELLS).statuses, [{ deviceTime: null, attributes: { odometer: 0x01000000 } }]);
  });

  it('reads a BS50 battery management block: cell voltages, charge, current, pack voltage, protections, temperatures', () => {
    const message = decodeText(BMS_BLOCK);
    assert.equal(message.uniqueId, '352602014867');
    const cells = Array.from({ length: 14 }, (_, index) => message.statuses[0]?.attributes[`battery${index + 1}`]);
    assert.deepEqual(cells, [4.081, 4.081, 4.08, 4.082, 4.083, 4.082, 4.082, 4.084, 4.082, 4.084, 4.084, 4.082, 4.083, 4.082]);
    assert.deepEqual(message.statuses, [{
      deviceTime: null,
      attributes: {
        ...Object.fromEntries(cells.map((voltage, index) => [`battery${index + 1}`, voltage])),
        charge: true, current: 0, battery: 56.32, batteryLevel: 99, batteryOverheat: false, chargeProtection: false, dischargeProtection: false,
        cycles: 4, faultAlarm: 0, powerTemp: 28, equilibriumTemp: 28, batteryTemp1: 28, batteryTemp2: 26, calibrationCapacity: 40, dischargeCapacity: 160,
      },
    }]);
  });

  it('reads the BS51 pairs 90, 91, 92 and 96 big-endian (3.816 V cells, 26 °C, no current at rest), the rest read past', () => {
    assert.deepEqual(decodeText(BMS_PAIRS).statuses, [{
      deviceTime: null,
      attributes: {
        cumulativeVoltage: 53.3, gatherVoltage: 0, current: 0, soc: 47.6,
        maxCellVoltage: 3.816, maxCellVoltageCount: 6, minCellVoltage: 3.804, minCellVoltageCount: 10,
        maxTemp: 26, maxTempCount: 1, minTemp: 26, minTempCount: 1,
        cellTemp1: 26, cellTemp2: -40, cellTemp3: -40, cellTemp4: -40, cellTemp5: -40, cellTemp6: -40, cellTemp7: -40,
      },
    }]);
    assert.throws(() => decodeText('(007030201454BS5190:0215ZZ)'), ProtocolError);
    assert.throws(() => decodeText('(352602014867BS500064FF0E)'), ProtocolError);
  });
});

describe('tk103 framing', () => {
  it('throws on garbage and on a frame without end within 1024 bytes', () => {
    assert.throws(() => tk103Protocol.splitFrames(Buffer.from('GET / HTTP/1.1\r\n'), {}), ProtocolError);
    assert.throws(() => tk103Protocol.splitFrames(Buffer.from(`(${'1'.repeat(1100)}`), {}), ProtocolError);
  });

  it('gives the same frames however the stream is chunked, and round-trips the simulator frames', () => {
    const fix = { time: new Date('2024-01-01T10:00:00Z'), latitude: -33.5, longitude: -70.25, altitude: 0, speed: 20, course: 181.5, valid: true, ignition: true, odometer: 5000 };
    assertSameFramesHoweverChunked(tk103Protocol, [tk103Login('027000000001'), tk103Location('027000000001', fix), Buffer.from(RESULT), tk103Location('027000000001', fix, 'BP05')]);
    for (const command of ['BR00', 'BP05'] as const) {
      const message = tk103Protocol.decode(tk103Location('027000000001', fix, command), {}, NOW);
      const position = message.positions[0]!;
      assert.equal(position.fixTime.toISOString(), fix.time.toISOString());
      assertCoordinates(position, -33.5, -70.25);
      assert.ok(Math.abs(position.speed - 20) < 0.05);
      assert.deepEqual([position.course, position.attributes['ignition'], position.attributes['odometer']], [181.5, true, 5000]);
    }
    assert.equal(tk103Protocol.decode(tk103Location('027000000001', { ...fix, sos: true }), {}, NOW).positions[0]!.attributes['alarm'], 'sos');
  });
});

describe('tk103 commands', () => {
  const context = { uniqueId: '123456789012', sequence: 1, now: NOW };
  const encode = (type: Parameters<typeof tk103Commands.encode>[0]['type'], attributes: Record<string, unknown> = {}) =>
    tk103Commands.encode({ type, attributes }, context).toString('latin1');

  it('writes Traccar\'s instructions', () => {
    assert.equal(encode('positionPeriodic', { frequency: 60 }), '(123456789012AR00003C0000)');
    assert.equal(encode('positionStop'), '(123456789012AR0000000000)');
    assert.equal(encode('positionSingle'), '(123456789012AP00)');
    assert.equal(encode('engineStop'), '(123456789012AV010)');
    assert.equal(encode('engineResume'), '(123456789012AV011)');
    assert.equal(encode('rebootDevice'), '(123456789012AT00)');
    assert.equal(encode('outputControl', { index: 1, data: '1' }), '(123456789012AV001)');
    assert.equal(encode('custom', { data: 'AP07' }), '(123456789012AP07)');
  });

  it('refuses what cannot be expressed', () => {
    assert.throws(() => encode('custom', { data: 'a)b' }), ProtocolError);
    assert.throws(() => encode('positionPeriodic', { frequency: 70000 }), ProtocolError);
    assert.throws(() => encode('alarmArm'), ProtocolError);
  });
});

describe('tk103 fuzzing', () => {
  it('never throws anything but ProtocolError on random bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      decodeStream(tk103Protocol, Buffer.concat([Buffer.from('('), bytes, Buffer.from(')')]));
    }), { numRuns: 2000 });
  });

  it('decodes mutated published frames safely', () => {
    const frames = [BR00, BP05, BP05_COMMAS, ALARM, BATTERY, RESULT, SPACES, BMS_PAIRS, BMS_BLOCK].map((text) => Buffer.from(text, 'latin1'));
    fc.assert(fc.property(fc.constantFrom(...frames), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0x20, max: 0x7e })), { minLength: 1, maxLength: 6 }), (frame, changes) => {
      const mutated = Buffer.from(frame);
      for (const [index, value] of changes) mutated[1 + (index % (mutated.length - 2))] = value;
      decodeStream(tk103Protocol, mutated);
    }), { numRuns: 2000 });
  });

  it('finds no position in random text', () => {
    fc.assert(fc.property(fc.string({ maxLength: 150 }), (text) => {
      const messages = decodeStream(tk103Protocol, Buffer.from(`(${text.replace(/[()$]/g, '')})`, 'latin1'));
      assert.ok(messages.every((message) => message.positions.length === 0));
    }), { numRuns: 2000 });
  });
});
