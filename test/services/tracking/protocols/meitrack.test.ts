import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { meitrackLocation } from '../../../../src/services/tracking/protocols/meitrack/simulator.ts';
import { meitrackCommands, meitrackProtocol } from '../../../../src/services/tracking/protocols/meitrack/decoder.ts';
import type { DecodedMessage } from '../../../../src/services/tracking/protocols/types.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW, decodeOne, onlyPositionOf, assertCoordinates, assertSameFramesHoweverChunked, decodeStream, hex, assertFix } from './protocol-test-helpers.ts';

// Frames published in Traccar's MeitrackProtocolDecoderTest (a few with a length field the capture got wrong are
// decoded without the framer, as Traccar's test does).
const AAA = '$$B140,013777001293701,AAA,35,-7.266760,112.743550,140521095314,A,3,22,0,275,2.7,45,1984,8059,510|1|3504|EBFE,0000,0000|0000|0000|0914|0002,,*F9\r\n';
const AAA_VOLTAGES = '$$D149,867047043162018,AAA,35,-1.264865,36.800705,211001105240,A,9,20,41.0,323,1,1697,1,0,000|00||,0000,4.33|12.96|1.92|2.72|2.69,0.000000|0|0.000000,*E1\r\n';
const AAA_FUEL_TEMPERATURE = '$$V177,863835026871173,AAA,35,34.516428,10.470160,170915154043,A,9,12,68,74,0.9,9,1988259,525882,605|2|008C|0007B5A6,0200,0003|0000|0000|01A6|0571,00000001,,3,0000,06FB2E,360,511*74\r\n';
const AAA_SOS = '$$m140,013777008931857,AAA,1,54.739580,25.273263,141120144603,V,0,25,0,6,50.0,159,19825,13940,246|1|0065|118A,0100,0000|0000|0000|092A|0001,,*1C\r\n';
const AFF = '$$J163,123123123123123,AFF,0004,35,58.588926,16.180473,140928192856,A,10,27,0,161,1.2,19,1648894,435695,240|24|88B9|E435,0000,|||0A22|0000,00000001,,50,,,,,,,,,,,,,*70\r\n';
const CCC = '24245838362c3336393830303031343039303032312c4343432c020134000100000023381f91ffe354b806c5e3121b0009130000000000000000d33801007cbf0200fe0101000435feeb02000500a3010000000000002a62650d0a';
const CCE = '2424593434312c3836353431333035303839313733372c4343452c00000000030088001800050501061607191400150008080000098e000a05000b0c001608001a0000402300fe9000000602c3fe5ffe03e22a1f0904e6688d2b0cd94002000d5f6f03001c01000000050e0cf901010032700298c80899ff4b16010113464444204c5445284c54452042414e44203329fea50601ffffff7ffffea807024d0000000000feb205010000000083001700050501061607191400150008080000098e000a05000b0c001608001a0000405100fe9000000502c3fe5ffe03e22a1f0904e6688d2b0cd94002000d606f0300050e0cf901010032700298c80899ff4b16010113464444204c5445284c54452042414e44203329fea50601ffffff7ffffea807024d0000000000feb205010000000088001800050501061607151400150008080000098e000a05000b0c001607001a0000402300fe9000000602c3fe5ffe03e22a1f0904f0688d2b0cd94002000d696f03001c01000000050e0cf901010032700298c80897ff4b16010113464444204c5445284c54452042414e44203329fea50601ffffff7ffffea807024d0000000000feb20501000000002a36320d0a';
const CCE_LOCK = '24245b3131342c3836343630363034343939333938372c4343452c0000000001005000130006012305000600070f1b004702060800000900000a00000b0000199d011a00000602d179570103b25ccc0604cf04862b0cc65b01000da4090d001c01000000010e0ccc010000b627be11000000002a41300d0a';

const decodeFrame = (frame: Buffer | string): DecodedMessage => decodeOne(meitrackProtocol, Buffer.isBuffer(frame) ? frame : Buffer.from(frame, 'latin1'));
const onlyPosition = (frame: Buffer | string) => onlyPositionOf(meitrackProtocol, Buffer.isBuffer(frame) ? frame : Buffer.from(frame, 'latin1'));

describe('meitrack text reports', () => {
  it('decodes AAA: event, UTC time, coordinates, km/h, I/O and the hex battery/power block', () => {
    const message = decodeFrame(AAA);
    assert.equal(message.uniqueId, '013777001293701');
    assert.equal(message.ack, undefined);
    const position = message.positions[0]!;
    assertFix(position, '2014-05-21T09:53:14.000Z', true, -7.26676, 112.74355);
    assert.deepEqual([position.speed, position.course, position.altitude], [0, 275, 45]);
    assert.deepEqual(position.attributes, {
      event: 35, sat: 3, hdop: 2.7, odometer: 1984, runtime: '8059', input: 0, output: 0, adc1: 0, adc2: 0, adc3: 0, battery: 0x914 / 100, power: 0x2 / 100,
    });
  });

  it('reads the voltage block of newer firmware, fuel and temperature sensors, alarms, and AFF', () => {
    const voltages = onlyPosition(AAA_VOLTAGES);
    assert.deepEqual([voltages.attributes['battery'], voltages.attributes['power']], [4.33, 12.96]);
    assert.ok(Math.abs(voltages.speed - 41 / 1.852) < 1e-9);
    const sensors = onlyPosition(AAA_FUEL_TEMPERATURE);
    assert.equal(sensors.attributes['eventData'], '00000001');
    assert.equal(sensors.attributes['fuel'], 0);
    assert.equal(sensors.attributes['temp6'], ((0xfb2e << 16) >> 16) / 100);
    assert.equal(onlyPosition(AAA_SOS).attributes['alarm'], 'sos');
    const aff = onlyPosition(AFF);
    assert.equal(aff.fixTime.toISOString(), '2014-09-28T19:28:56.000Z');
    assertCoordinates(aff, 58.588926, 16.180473);
  });

  it('answers AAC, keeps a D82 answer as a result, and skips photo transfers', () => {
    assert.deepEqual(decodeFrame('$$z27,861451040910625,AAC,1*D3\r\n').ack, Buffer.from('@@z27,861451040910625,AAC,1*0B\r\n'));
    const result = meitrackProtocol.decode(Buffer.from('$$u28,864606044993987,D82,0*D6'), {}, NOW);
    assert.deepEqual(result.statuses, [{ deviceTime: null, attributes: { result: 'D82,0' } }]);
    assert.deepEqual(decodeFrame('$$D28,353358017784062,D03,OK*F3\r\n'), { uniqueId: '353358017784062', positions: [], statuses: [] });
  });
});

describe('meitrack binary batches', () => {
  it('decodes CCC records (seconds since 2000, little-endian) and answers with the count', () => {
    const message = decodeFrame(hex(CCC));
    const position = message.positions[0]!;
    assertFix(position, '2014-05-24T04:59:49.000Z', false, -7.2665, 112.74365);
    assert.deepEqual(message.ack, Buffer.from('@@X27,369800014090021,CCC,1*5F\r\n'.replace('5F', checksumOf('@@X27,369800014090021,CCC,1*'))));
  });

  it('decodes every CCE record with its typed parameters', () => {
    const message = decodeFrame(hex(CCE));
    assert.equal(message.positions.length, 3);
    assert.equal(message.positions[0]!.attributes['batteryLevel'], 77);
    assert.equal(decodeFrame(hex(CCE_LOCK)).positions[0]!.attributes['lock'], true);
  });
});

function checksumOf(text: string): string {
  return ([...Buffer.from(text, 'latin1')].reduce((sum, byte) => (sum + byte) & 0xff, 0)).toString(16).toUpperCase().padStart(2, '0');
}

describe('meitrack framing and commands', () => {
  it('splits by the length field, refuses garbage and oversized lengths', () => {
    assert.throws(() => meitrackProtocol.splitFrames(Buffer.from('GET / HTTP/1.1\r\n'), {}), ProtocolError);
    assert.throws(() => meitrackProtocol.splitFrames(Buffer.from('$$A99999,1'), {}), ProtocolError);
    assert.throws(() => meitrackProtocol.splitFrames(Buffer.from('$$Axx,123'), {}), ProtocolError);
    const fix = { time: new Date('2024-01-01T10:00:00Z'), latitude: -33.5, longitude: -70.25, altitude: 500, speed: 20, course: 181, valid: true, sos: true, odometer: 5000 };
    assertSameFramesHoweverChunked(meitrackProtocol, [Buffer.from(AAA), meitrackLocation('861234567890123', fix), hex(CCC)]);
    const position = onlyPosition(meitrackLocation('861234567890123', fix));
    assert.equal(position.fixTime.toISOString(), fix.time.toISOString());
    assertCoordinates(position, -33.5, -70.25);
    assert.ok(Math.abs(position.speed - 20) < 0.3);
    assert.deepEqual([position.course, position.altitude, position.attributes['alarm'], position.attributes['odometer']], [181, 500, 'sos', 5000]);
  });

  it('encodes Traccar\'s instructions with length and checksum', () => {
    const context = { uniqueId: '861234567890123', sequence: 1, now: NOW };
    const encode = (type: 'custom' | 'positionSingle' | 'engineStop' | 'rebootDevice', attributes: Record<string, unknown> = {}) =>
      meitrackCommands.encode({ type, attributes }, context).toString('latin1');
    assert.equal(encode('positionSingle'), `@@A25,861234567890123,A10*${checksumOf('@@A25,861234567890123,A10*')}\r\n`);
    assert.match(encode('engineStop'), /^@@A33,861234567890123,C01,0,12222\*[0-9A-F]{2}\r\n$/);
    assert.match(encode('custom', { data: 'A11,30' }), /^@@A28,861234567890123,A11,30\*/);
    assert.throws(() => encode('custom', { data: 'A*1' }), ProtocolError);
    assert.throws(() => encode('rebootDevice'), ProtocolError);
  });
});

describe('meitrack fuzzing', () => {
  it('decodes random, mutated and truncated frames safely', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), fc.constantFrom('AAA', 'CCC', 'CCE', 'AAC', 'D82'), (bytes, type) => {
      const body = Buffer.concat([Buffer.from(`,861234567890123,${type},`), bytes, Buffer.from('*00\r\n')]);
      decodeStream(meitrackProtocol, Buffer.concat([Buffer.from(`$$A${body.length}`), body]));
    }), { numRuns: 2000 });
    const frames = [Buffer.from(AAA), Buffer.from(AAA_FUEL_TEMPERATURE), hex(CCC), hex(CCE)];
    fc.assert(fc.property(fc.constantFrom(...frames), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), (frame, changes) => {
      const mutated = Buffer.from(frame);
      for (const [index, value] of changes) mutated[8 + (index % (mutated.length - 8))] = value;
      decodeStream(meitrackProtocol, mutated);
    }), { numRuns: 2000 });
  });

  it('finds no position in a text report of random fields', () => {
    fc.assert(fc.property(fc.array(fc.string({ maxLength: 8 }), { maxLength: 30 }), (fields) => {
      const body = `,861234567890123,AAA,${fields.join(',').replace(/[*\r\n]/g, '')}*00\r\n`;
      const messages = decodeStream(meitrackProtocol, Buffer.from(`$$A${body.length}${body}`, 'latin1'));
      assert.ok(messages.every((message) => message.positions.length === 0));
    }), { numRuns: 1000 });
  });
});
