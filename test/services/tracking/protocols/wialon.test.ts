import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { wialonData, wialonLogin } from '../../../../src/services/tracking/protocols/wialon/simulator.ts';
import type { DecodedMessage } from '../../../../src/services/tracking/protocols/types.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { wialonCommands, wialonProtocol } from '../../../../src/services/tracking/protocols/wialon/decoder.ts';
import { NOW, decodeOne, assertCoordinates, assertSameFramesHoweverChunked, decodeStream } from './protocol-test-helpers.ts';

// Lines published in Traccar's WialonProtocolDecoderTest.
const SHORT = '#SD#270413;205601;5544.6025;N;03739.6834;E;1;2;3;4';
const SHORT_UDP = '99999999#SD#270413;205601;5544.6025;N;03739.6834;E;1;2;3;4';
const EXTENDED = '#D#270413;205601;5544.6025;N;03739.6834;E;1;2;3;4;0.0;0;0;14.77,0.02,3.6;NA;count1:1:564,fuel:2:45.8,hw:3:V4.5';
const EXTENDED_V2_UDP = '2.0;99999999#D#101118;061143;0756.0930;N;12338.6403;E;18.223;99.766;-4.000;10;0.800;NA;NA;NA;NA;101_521347:1:521249;F24A';
const NO_DATE = '#D#NA;NA;5429.681944502211763;N;02654.60403650999069;E;NA;NA;NA;NA;NA;NA;NA;1.0;NA;m1:1:9196679,finish:1:1;0x9b0';
const NO_LOCATION = '#D#NA;NA;NA;NA;NA;NA;NA;NA;NA;NA;NA;NA;NA;;NA;SOS:1:0,temp:3:18,bat:3:99,mnc:1:02,mcc:1:250,lac:1:5901,cell_id:1:45542';
const BATCH = '#B#080914;073235;5027.50625;N;03026.19321;E;0.700;0.000;NA;4;NA;NA;NA;;NA;Батарея:3:100 %|080914;073420;5027.50845;N;03026.18854;E;1.996;292.540;NA;4;NA;NA;NA;;NA;Батарея:3:100 %';

const decodeLine = (line: string): DecodedMessage => decodeOne(wialonProtocol, Buffer.from(`${line}\r\n`, 'utf8'));

describe('wialon', () => {
  it('answers the 1.1 and 2.0 logins with #AL#1 and the ping with #AP#', () => {
    assert.deepEqual(decodeLine('#L#123456789012345;test'), { positions: [], statuses: [], uniqueId: '123456789012345', ack: Buffer.from('#AL#1\r\n') });
    assert.equal(decodeLine('#L#2.0;42001300083;;CE45').uniqueId, '42001300083');
    assert.deepEqual(decodeLine('#P#'), { positions: [], statuses: [], ack: Buffer.from('#AP#\r\n') });
  });

  it('decodes short data: ddmmyy hhmmss UTC, km/h to knots, valid from 3 satellites, answered #AD#1', () => {
    const message = decodeLine(SHORT);
    const position = message.positions[0]!;
    assert.equal(position.fixTime.toISOString(), '2013-04-27T20:56:01.000Z');
    assertCoordinates(position, 55.74338, 37.66139);
    assert.deepEqual([position.valid, position.speed, position.course, position.altitude, position.attributes['sat']], [true, 1 / 1.852, 2, 3, 4]);
    assert.deepEqual(message.ack, Buffer.from('#AD#1\r\n'));
    assert.equal(decodeLine(SHORT_UDP).uniqueId, '99999999', 'UDP lines carry the id');
  });

  it('decodes extended data: hdop, inputs, outputs, ADC, typed parameters; 2.0 lines with their CRC', () => {
    const position = decodeLine(EXTENDED).positions[0]!;
    assert.deepEqual(position.attributes, {
      sat: 4, hdop: 0, input: '0', output: '0', adc1: '14.77', adc2: '0.02', adc3: '3.6', count1: 564, fuel: 45.8, hw: 'V4.5',
    });
    const v2 = decodeLine(EXTENDED_V2_UDP);
    assert.equal(v2.uniqueId, '99999999');
    assert.equal(v2.positions[0]!.fixTime.toISOString(), '2018-11-10T06:11:43.000Z');
    assertCoordinates(v2.positions[0]!, 7.934883, 123.644005);
    assert.equal(v2.positions[0]!.altitude, -4);
  });

  it('uses the server time without a date, and keeps a line without coordinates as a status', () => {
    const undated = decodeLine(NO_DATE).positions[0]!;
    assert.equal(undated.fixTime.getTime(), NOW.getTime());
    assert.equal(undated.valid, false);
    assertCoordinates(undated, 54.494699, 26.910067);
    assert.deepEqual(decodeLine(NO_LOCATION).statuses, [{ deviceTime: NOW, attributes: { sos: 0, batteryLevel: 99, deviceTemp: 18 } }]);
  });

  it('decodes a batch as archive positions (UTF-8 parameter names), answered with the count', () => {
    const message = decodeLine(BATCH);
    assert.deepEqual(message.positions.map((position) => [position.fixTime.toISOString(), position.attributes['archive'], position.attributes['батарея']]), [
      ['2014-09-08T07:32:35.000Z', true, '100 %'],
      ['2014-09-08T07:34:20.000Z', true, '100 %'],
    ]);
    assert.deepEqual(message.ack, Buffer.from('#AB#2\r\n'));
  });

  it('keeps a text message as a result, answered #AM#1', () => {
    assert.deepEqual(decodeLine('#M#hello driver'), { positions: [], statuses: [{ deviceTime: NOW, attributes: { result: 'hello driver' } }], ack: Buffer.from('#AM#1\r\n') });
  });

  it('frames lines, refuses garbage, and round-trips the simulator lines however chunked', () => {
    assert.throws(() => wialonProtocol.splitFrames(Buffer.from('GET / HTTP/1.1\r\n'), {}), ProtocolError);
    assert.throws(() => wialonProtocol.splitFrames(Buffer.from(`#D#${'1'.repeat(5000)}`), {}), ProtocolError);
    const fix = { time: new Date('2024-01-01T10:00:00Z'), latitude: -33.5, longitude: -70.25, altitude: 500, speed: 20, course: 181, valid: true, ignition: true, odometer: 5000 };
    assertSameFramesHoweverChunked(wialonProtocol, [wialonLogin('863005390000001'), wialonData(fix), Buffer.from('#P#\r\n')]);
    const position = wialonProtocol.decode(wialonData(fix), {}, NOW).positions[0]!;
    assert.equal(position.fixTime.toISOString(), fix.time.toISOString());
    assertCoordinates(position, -33.5, -70.25);
    assert.ok(Math.abs(position.speed - 20) < 0.05);
    assert.deepEqual([position.course, position.altitude, position.attributes['ignition'], position.attributes['odometer']], [181, 500, true, 5000]);
  });

  it('encodes Traccar\'s commands', () => {
    const context = { uniqueId: '1', sequence: 1, now: NOW };
    assert.equal(wialonCommands.encode({ type: 'rebootDevice', attributes: {} }, context).toString(), 'reboot\r\n');
    assert.equal(wialonCommands.encode({ type: 'outputControl', attributes: { index: 2, data: '1' } }, context).toString(), 'L2=1\r\n');
    assert.throws(() => wialonCommands.encode({ type: 'outputControl', attributes: { index: 'x', data: '1' } }, context), ProtocolError);
    assert.throws(() => wialonCommands.encode({ type: 'engineStop', attributes: {} }, context), ProtocolError);
  });
});

describe('wialon fuzzing', () => {
  it('decodes random and mutated lines safely, and no position from lines without a data type', () => {
    const field = fc.oneof(fc.constantFrom('NA', '', 'N', 'S', 'E', 'W', '1.5', 'a:1:2', 'b:3:x'), fc.stringMatching(/^-?\d{0,10}(\.\d{0,6})?$/), fc.string({ maxLength: 6 }));
    fc.assert(fc.property(fc.constantFrom('L', 'D', 'SD', 'B', 'M', 'P', 'X'), fc.array(field, { maxLength: 20 }), (type, fields) => {
      const messages = decodeStream(wialonProtocol, Buffer.from(`#${type}#${fields.join(';').replace(/[\r\n]/g, '')}\r\n`, 'utf8'));
      if (!['D', 'SD', 'B'].includes(type)) assert.ok(messages.every((message) => message.positions.length === 0));
    }), { numRuns: 2000 });
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      decodeStream(wialonProtocol, Buffer.concat([Buffer.from('#'), bytes, Buffer.from('\n')]));
    }), { numRuns: 2000 });
    const lines = [SHORT, EXTENDED, EXTENDED_V2_UDP, BATCH].map((line) => Buffer.from(`${line}\n`, 'utf8'));
    fc.assert(fc.property(fc.constantFrom(...lines), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0x20, max: 0x7e })), { minLength: 1, maxLength: 6 }), (line, changes) => {
      const mutated = Buffer.from(line);
      for (const [index, value] of changes) mutated[1 + (index % (mutated.length - 2))] = value;
      decodeStream(wialonProtocol, mutated);
    }), { numRuns: 2000 });
  });
});
