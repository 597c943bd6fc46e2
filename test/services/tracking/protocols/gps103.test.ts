import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { gps103Heartbeat, gps103Location, gps103Login } from '../../../../src/services/tracking/protocols/gps103/simulator.ts';
import { gps103Commands, gps103Protocol } from '../../../../src/services/tracking/protocols/gps103/decoder.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW, assertCoordinates, assertSameFramesHoweverChunked, decodeStream, assertFix, textDecoders } from './protocol-test-helpers.ts';

// Sentences published in Traccar's Gps103ProtocolDecoderTest.
const TRACKER_WITH_OFFSET = 'imei:359710049092324,tracker,151027025958,,F,235957.000,A,2429.5156,N,04424.5828,E,0.01,27.91,,0,0,,,;';
const TRACKER = 'imei:359710045559474,tracker,151030080103,,F,000101.000,A,5443.3834,N,02512.9071,E,0.00,0;';
const TRACKER_SOUTH_WEST = 'imei:012497000208821,tracker,1301080525,,F,212511.000,A,2228.5279,S,06855.6328,W,18.62,268.98,;';
const SLASHED_DATE = 'imei:359710040656622,tracker,13/02/27 23:40,,F,125952.000,A,3450.9430,S,13828.6753,E,0.00,0;';
const FUEL_AND_TEMPERATURE = 'imei:353451044508750,001,0809231929,13554900601,F,055403.000,A,2233.1870,N,11354.3067,E,0.00,30.1,65.43,1,0,10.5%,0.0%,28;';
const HELP_ME = 'imei:100000000000000,help me,1004171910,,F,010203.000,A,0102.0003,N,00102.0003,E,1.02,;';
const NO_FIX_ALARM = 'imei:865456055519122,sensor alarm,2208011920,,L,;';
const RFID = 'imei:868683020235846,rfid,160202091347,49121185,F,011344.000,A,0447.7273,N,07538.9934,W,0.00,0,,0,0,0.00%,,;';
const OBD = 'imei:359710048977327,OBD,180301094003,5000000,0.00,0.00,98,18,68.63%,55,25.10%,1368,14.24,,,,;';
const ALTERNATIVE = 'imei:861359038609986,Equipo 1,---,------,----,214734,241018,26,1,-33.42317,-70.61930,067,229,0674,1.00,08,0,1,---,*';
const PREFIXED = '359769031878322imei:359769031878322,tracker,1602160718,2,F,221811.000,A,1655.2193,S,14546.6722,E,0.00,,;';
const PHOTO_CHUNK = 'imei:864180034124375,vr,0c00fa011ea05a03d726977103ad0034c98ef49e;';

const { decodeText, onlyPosition } = textDecoders(gps103Protocol);

describe('gps103 reports', () => {
  it('takes the date from the local stamp and the offset from the UTC fix time, as Traccar does', () => {
    const message = decodeText(TRACKER_WITH_OFFSET);
    assert.equal(message.uniqueId, '359710049092324');
    assert.equal(message.ack, undefined, 'reports are not answered');
    const position = message.positions[0]!;
    assertFix(position, '2015-10-26T23:59:57.000Z', true, 24.49193, 44.40971);
    assert.deepEqual([position.speed, position.course], [0.01, 27.91]);
    assert.deepEqual(position.attributes, { ignition: false, door: false });
    const other = onlyPosition(TRACKER);
    assert.equal(other.fixTime.toISOString(), '2015-10-30T00:01:01.000Z');
    assertCoordinates(other, 54.72306, 25.21512);
  });

  it('reads hemispheres, a yy/mm/dd hh:mm stamp, fuel and temperature, and the keyword as event', () => {
    const southWest = onlyPosition(TRACKER_SOUTH_WEST);
    assert.equal(southWest.fixTime.toISOString(), '2013-01-07T21:25:11.000Z');
    assertCoordinates(southWest, -22.475465, -68.927213);
    assert.equal(southWest.speed, 18.62, 'knots as sent');
    assert.equal(onlyPosition(SLASHED_DATE).fixTime.toISOString(), '2013-02-27T12:59:52.000Z');
    const sensors = onlyPosition(FUEL_AND_TEMPERATURE);
    assert.equal(sensors.altitude, 65.43);
    assert.deepEqual(sensors.attributes, { event: '001', ignition: true, door: false, fuel1: 10.5, fuel2: 0, temp1: 28 });
  });

  it("reads a command's acknowledgement (the instruction's letter, then t) as the answer, and keeps it as event too", () => {
    // Logged from a Coban tracker answering **,imei:…,J (engine stop).
    const stopped = onlyPosition('imei:868166054696190,jt,231226105556,,F,105556.000,A,3518.59664,N,04658.22381,E,0.00,13.26;');
    assert.deepEqual(stopped.attributes, { result: 'jt', event: 'jt' });
    assert.equal(onlyPosition(TRACKER).attributes['result'], undefined);
    assert.equal(onlyPosition(FUEL_AND_TEMPERATURE).attributes['result'], undefined);
  });

  it('maps help me to the SOS alarm and answers it', () => {
    const message = decodeText(HELP_ME);
    assert.equal(message.positions[0]!.attributes['alarm'], 'sos');
    assert.deepEqual(message.ack, Buffer.from('**,imei:100000000000000,E;'));
  });

  it('keeps a report without fix as a status, and an RFID as the driver', () => {
    assert.deepEqual(decodeText(NO_FIX_ALARM).statuses, [{ deviceTime: null, attributes: { alarm: 'vibration' } }]);
    assert.deepEqual(onlyPosition(RFID).attributes, { event: 'rfid', driverUniqueId: '49121185', ignition: false, door: false, fuel1: 0 });
  });

  it('decodes OBD reports as statuses at their time', () => {
    const [status] = decodeText(OBD).statuses;
    assert.equal(status!.deviceTime!.toISOString(), '2018-03-01T09:40:03.000Z');
    assert.deepEqual(status!.attributes, {
      odometer: 5_000_000, fuelConsumption: 0, obdSpeed: 18, engineLoad: '68.63%', throttle: '25.10%', rpm: 1368,
      battery: 14.24, dtcs: '', hours: 98 * 3_600_000, coolantTemp: 55,
    });
  });

  it('decodes the alternative form ending in * (decimal degrees, km/h)', () => {
    const position = onlyPosition(ALTERNATIVE);
    assert.equal(position.fixTime.toISOString(), '2018-10-24T21:47:34.000Z');
    assertCoordinates(position, -33.42317, -70.6193);
    assert.ok(Math.abs(position.speed - 67 / 1.852) < 1e-9);
    assert.deepEqual([position.course, position.altitude, position.attributes['sat'], position.attributes['charge']], [229, 674, 8, true]);
  });

  it('answers the log-on LOAD and the heartbeat ON, and a report prefixed with the IMEI ON too', () => {
    assert.deepEqual(decodeText('##,imei:359586015829802,A;'), { positions: [], statuses: [], ack: Buffer.from('LOAD'), uniqueId: '359586015829802' });
    assert.deepEqual(decodeText('359586015829802;'), { positions: [], statuses: [], ack: Buffer.from('ON'), uniqueId: '359586015829802' });
    const prefixed = decodeText(PREFIXED);
    assert.deepEqual(prefixed.ack, Buffer.from('ON'));
    assertCoordinates(prefixed.positions[0]!, -16.920322, 145.77787);
  });

  it('ignores photo chunks and sentences it does not know', () => {
    assert.deepEqual(decodeText(PHOTO_CHUNK), { positions: [], statuses: [] });
    assert.deepEqual(decodeText('imei:359586015829802,something else entirely;'), { positions: [], statuses: [] });
  });
});

describe('gps103 framing', () => {
  it('splits on ; * and line breaks, keeping the terminator, and waits for a partial sentence', () => {
    const stream = Buffer.from(`${TRACKER}\r\n${ALTERNATIVE}359586015829802\nimei:35`, 'latin1');
    const { frames, consumed } = gps103Protocol.splitFrames(stream, {});
    assert.deepEqual(frames.map((frame) => frame.toString('latin1')), [TRACKER, ALTERNATIVE, '359586015829802\n']);
    assert.equal(stream.subarray(consumed).toString('latin1'), 'imei:35');
  });

  it('throws on garbage and on a sentence without end within 8192 bytes', () => {
    assert.throws(() => gps103Protocol.splitFrames(Buffer.from('GET / HTTP/1.1\r\n'), {}), ProtocolError);
    assert.throws(() => gps103Protocol.splitFrames(Buffer.from(`imei:${'1'.repeat(9000)}`), {}), ProtocolError);
  });

  it('gives the same frames however the stream is chunked', () => {
    const fix = { time: new Date('2024-01-01T10:00:00Z'), latitude: 52.5, longitude: 13.4, altitude: 40, speed: 10, course: 90, valid: true };
    assertSameFramesHoweverChunked(gps103Protocol, [gps103Login('359586015829802'), gps103Location('359586015829802', fix), gps103Heartbeat('359586015829802')]);
  });

  it('round-trips the simulator report', () => {
    const fix = { time: new Date('2024-01-01T23:59:58Z'), latitude: -33.5, longitude: -70.25, altitude: 500, speed: 20, course: 181, valid: true, ignition: true, sos: true };
    const message = gps103Protocol.decode(gps103Location('359586015829802', fix), {}, NOW);
    const position = message.positions[0]!;
    assert.equal(position.fixTime.toISOString(), fix.time.toISOString());
    assertCoordinates(position, -33.5, -70.25);
    assert.deepEqual([position.speed, position.course, position.altitude, position.attributes['alarm'], position.attributes['ignition']], [20, 181, 500, 'sos', true]);
  });
});

describe('gps103 commands', () => {
  const context = { uniqueId: '123456789012345', sequence: 1, now: NOW };
  const encode = (type: Parameters<typeof gps103Commands.encode>[0]['type'], attributes: Record<string, unknown> = {}) =>
    gps103Commands.encode({ type, attributes }, context).toString('latin1');

  it('writes Traccar\'s instructions', () => {
    assert.equal(encode('positionPeriodic', { frequency: 300 }), '**,imei:123456789012345,C,05m');
    assert.equal(encode('positionPeriodic', { frequency: 7200 }), '**,imei:123456789012345,C,02h');
    assert.equal(encode('positionPeriodic', { frequency: 30 }), '**,imei:123456789012345,C,30s');
    assert.equal(encode('custom', { data: 'H,080' }), '**,imei:123456789012345,H,080');
    assert.deepEqual(['positionSingle', 'positionStop', 'engineStop', 'engineResume', 'alarmArm', 'alarmDisarm'].map((type) => encode(type as 'custom').slice(-1)), ['B', 'D', 'J', 'K', 'L', 'M']);
  });

  it('refuses what cannot be expressed', () => {
    assert.throws(() => encode('custom', { data: 'a;b' }), ProtocolError);
    assert.throws(() => encode('positionPeriodic', { frequency: 0 }), ProtocolError);
    assert.throws(() => encode('rebootDevice'), ProtocolError);
  });
});

describe('gps103 fuzzing', () => {
  it('never throws anything but ProtocolError on random bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), fc.constantFrom('imei:', '##', '3', ''), (bytes, start) => {
      decodeStream(gps103Protocol, Buffer.concat([Buffer.from(start), bytes, Buffer.from(';')]));
    }), { numRuns: 2000 });
  });

  it('decodes random comma-separated sentences and mutated published ones safely', () => {
    const field = fc.oneof(
      fc.constantFrom('', 'A', 'V', 'N', 'S', 'E', 'W', 'F', 'L', 'tracker', 'help me', 'OBD', 'T:+1', 'oil 5', '10.5%'),
      fc.stringMatching(/^-?\d{0,12}(\.\d{0,6})?$/),
      fc.string({ maxLength: 6 }).filter((text) => !/[;*\r\n]/.test(text)),
    );
    fc.assert(fc.property(fc.array(field, { maxLength: 24 }), fc.constantFrom(';', '*'), (fields, end) => {
      decodeStream(gps103Protocol, Buffer.from(`imei:359586015829802,${fields.join(',')}${end}`, 'latin1'));
    }), { numRuns: 2000 });
    const sentences = [TRACKER_WITH_OFFSET, FUEL_AND_TEMPERATURE, OBD, ALTERNATIVE, RFID].map((text) => Buffer.from(text, 'latin1'));
    fc.assert(fc.property(fc.constantFrom(...sentences), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0x20, max: 0x7e })), { minLength: 1, maxLength: 6 }), (sentence, changes) => {
      const mutated = Buffer.from(sentence);
      for (const [index, value] of changes) mutated[index % (mutated.length - 1)] = value;
      decodeStream(gps103Protocol, mutated);
    }), { numRuns: 2000 });
  });

  it('finds no position in sentences that do not start like a report', () => {
    fc.assert(fc.property(fc.string({ maxLength: 120 }), (text) => {
      if (text.startsWith('imei:') || /^\d/.test(text)) return;
      assert.ok(decodeStream(gps103Protocol, Buffer.from(`${text};`, 'latin1')).every((message) => message.positions.length === 0));
    }), { numRuns: 1000 });
  });
});
