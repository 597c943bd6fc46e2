import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { watchLink, watchLocation } from '../../../../src/services/tracking/protocols/watch/simulator.ts';
import type { ConnectionState, DecodedMessage } from '../../../../src/services/tracking/protocols/types.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { watchCommands, watchProtocol } from '../../../../src/services/tracking/protocols/watch/decoder.ts';
import { NOW, decodeOne, assertCoordinates, assertSameFramesHoweverChunked, decodeStream, assertFix } from './protocol-test-helpers.ts';

// Frames published in Traccar's WatchProtocolDecoderTest.
const UD = '[3G*4700222306*0077*UD,120316,140444,A,48.779045,N,9.1574736,E,0.57,12.8,0.0,4,100,85,0,0,00000000,1,0,262,2,,,,,,,,,]';
const UD_WEST = '[3G*2104134718*00D0*UD,161019,134938,A,43.373367,N,71.157615,W,22.00,350.206,279.717,9,77,82,0,0,00000008,1,1,310,410,9250,13092,142,,00]';
const UD_WITH_INDEX = '[SG*8800000015*0087*UD,220414,134652,A,22.571707,N,113.8613968,E,0.1,0.0,100,7,60,90,1000,50,0000,4,1,460,0,9360,4082,131,9360,4092,148,9360,4091,143,9360,4153,141]';
const AL_SOS = '[3G*8308373902*0080*AL,230817,095346,A,47.083950,N,15.4821850,E,7.60,273.8,0.0,4,15,44,0,0,00010000,2,255,232,1,7605,42530,118,7605,58036,119,0,65.8]';
const LK = '[3G*4700186508*000B*LK,0,0,100]';
const INIT = '[3G*8800000015*000D*INIT,1,1,1,1]';
const TKQ = '[3G*8800000015*0003*TKQ]';
const INDEXED_LINK = '[SG*8800000015*0001*0002*LK]';
const BLOOD = '[3G*4700609403*0013*bphrt,120,79,73,,,,]';
// The voice message of Traccar's testDecodeVoiceMessage: its AMR bytes 7d 5b 5d 2c 2a ff, escaped as the watch sends them.
const VOICE = Buffer.concat([Buffer.from('[CS*1234567890*000e*TK,#!AMR'), Buffer.from([0x7d, 0x01, 0x7d, 0x02, 0x7d, 0x03, 0x7d, 0x04, 0x7d, 0x05, 0xff]), Buffer.from(']')]);
// The watch's confirmation of a voice message sent to it (an earlier version of that Traccar test).
const VOICE_RECEIVED = '[CS*1234567890*0004*TK,1]';
const ESCAPED = Buffer.concat([Buffer.from('[3G*1234567890*0005*TK,'), Buffer.from([0x7d, 0x01, 0x7d, 0x02, 0x7d, 0x03]), Buffer.from(']')]);

const decodeFrame = (frame: string | Buffer, state: ConnectionState = {}): DecodedMessage =>
  decodeOne(watchProtocol, Buffer.isBuffer(frame) ? frame : Buffer.from(frame, 'latin1'), state);

describe('watch', () => {
  it('decodes UD: ddmmyy hhmmss UTC, decimal degrees with hemispheres, km/h, battery, steps; not answered', () => {
    const message = decodeFrame(UD);
    assert.equal(message.uniqueId, '4700222306');
    assert.equal(message.ack, undefined);
    const position = message.positions[0]!;
    assertFix(position, '2016-03-12T14:04:44.000Z', true, 48.779045, 9.1574736);
    assert.ok(Math.abs(position.speed - 0.57 / 1.852) < 1e-9);
    assert.deepEqual([position.course, position.attributes['sat'], position.attributes['rssi'], position.attributes['batteryLevel'], position.attributes['steps']], [12.8, 4, 100, 85, 0]);
    const west = decodeFrame(UD_WEST).positions[0]!;
    assertCoordinates(west, 43.373367, -71.157615);
    assert.deepEqual([west.altitude, west.attributes['motion']], [279.717, undefined]);
  });

  it('reads an index before the length, and answers in the same envelope', () => {
    assert.equal(decodeFrame(UD_WITH_INDEX).positions[0]!.fixTime.toISOString(), '2014-04-22T13:46:52.000Z');
    assert.deepEqual(decodeFrame(INDEXED_LINK).ack, Buffer.from('[SG*8800000015*0001*0002*LK]'));
  });

  it('maps the status word of an AL location to its alarm and answers AL', () => {
    const message = decodeFrame(AL_SOS);
    assert.equal(message.positions[0]!.attributes['alarm'], 'sos');
    assert.deepEqual(message.ack, Buffer.from('[3G*8308373902*0002*AL]'));
  });

  it('answers LK with its steps and battery as a status, INIT and TKQ as Traccar does', () => {
    assert.deepEqual(decodeFrame(LK), { uniqueId: '4700186508', positions: [], statuses: [{ deviceTime: null, attributes: { batteryLevel: 100, steps: 0 } }], ack: Buffer.from('[3G*4700186508*0002*LK]') });
    assert.deepEqual(decodeFrame(INIT).ack, Buffer.from('[3G*8800000015*0006*INIT,1]'));
    assert.deepEqual(decodeFrame(TKQ).ack, Buffer.from('[3G*8800000015*0003*TKQ]'));
  });

  it('keeps health readings as statuses at the server time', () => {
    assert.deepEqual(decodeFrame(BLOOD).statuses, [{ deviceTime: NOW, attributes: { pressureHigh: '120', pressureLow: '79', heartRate: 73 } }]);
  });

  it('answers a voice message TK,1 and records it without its audio; a one-character TK is the watch confirming ours', () => {
    assert.deepEqual(decodeFrame(VOICE), {
      uniqueId: '1234567890', positions: [], statuses: [{ deviceTime: null, attributes: { media: 'audio', mediaSize: 11 } }], ack: Buffer.from('[CS*1234567890*0004*TK,1]'),
    });
    assert.deepEqual(decodeFrame(Buffer.from(VOICE.toString('latin1').replace('TK,', 'TK2,').replace('000e', '000f'), 'latin1')).ack, Buffer.from('[CS*1234567890*0005*TK2,1]'));
    assert.deepEqual(decodeFrame(VOICE_RECEIVED), { uniqueId: '1234567890', positions: [], statuses: [] });
  });

  it('confirms each part of a JXTK voice message and records the message at its last part', () => {
    const part = (index: number) => decodeFrame(`[3G*1234567890*0011*JXTK,1,2,${index},2,#!AMR]`);
    assert.deepEqual(part(1), { uniqueId: '1234567890', positions: [], statuses: [], ack: Buffer.from('[3G*1234567890*0007*JXTKR,1]') });
    assert.deepEqual(part(2).statuses, [{ deviceTime: null, attributes: { media: 'audio' } }]);
    assert.deepEqual(part(2).ack, Buffer.from('[3G*1234567890*0007*JXTKR,1]'));
  });

  it('records a picture (img) without the image, unanswered as in Traccar', () => {
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x7d, 0x02, 0xff, 0xd9]); // one escaped '['
    const message = decodeFrame(Buffer.concat([Buffer.from('[3G*1234567890*001c*img,5,240102030405,'), jpeg, Buffer.from(']')]));
    assert.deepEqual(message, { uniqueId: '1234567890', positions: [], statuses: [{ deviceTime: null, attributes: { media: 'image', mediaSize: 7 } }] });
    assert.deepEqual(decodeFrame('[3G*1234567890*0003*img]').statuses, [{ deviceTime: null, attributes: { media: 'image' } }]);
  });

  it('undoes } escapes and refuses an unknown one', () => {
    assert.deepEqual(decodeFrame(ESCAPED).statuses, [{ deviceTime: null, attributes: { media: 'audio', mediaSize: 3 } }]);
    assert.throws(() => decodeFrame(Buffer.concat([Buffer.from('[3G*1*0002*TK'), Buffer.from([0x7d, 0x09]), Buffer.from(']')])), ProtocolError);
  });

  it('frames by balanced brackets, scanning a long partial frame once, and refuses garbage', () => {
    assert.throws(() => watchProtocol.splitFrames(Buffer.from('GET / HTTP/1.1\r\n'), {}), ProtocolError);
    const state: ConnectionState = {};
    const long = Buffer.from(`[3G*1*0000*TK,${'x'.repeat(3000)}]`);
    assert.deepEqual(watchProtocol.splitFrames(long.subarray(0, 2000), state), { frames: [], consumed: 0 });
    assert.deepEqual(state.watchScan, { scanned: 2000, depth: 1 });
    assert.deepEqual(watchProtocol.splitFrames(long, state).frames, [long]);
    assert.equal(state.watchScan, undefined);
    assert.throws(() => watchProtocol.splitFrames(Buffer.concat([Buffer.from('['), Buffer.alloc(70_000, 0x41)]), {}), ProtocolError);
  });

  it('round-trips the simulator frames however chunked', () => {
    const fix = { time: new Date('2024-01-01T10:00:00Z'), latitude: -33.5, longitude: -70.25, altitude: 500, speed: 20, course: 181, valid: true, sos: true };
    assertSameFramesHoweverChunked(watchProtocol, [watchLink('9300000001'), watchLocation('9300000001', fix), Buffer.from(UD_WITH_INDEX)]);
    const message = watchProtocol.decode(watchLocation('9300000001', fix), {}, NOW);
    const position = message.positions[0]!;
    assert.equal(position.fixTime.toISOString(), fix.time.toISOString());
    assertCoordinates(position, -33.5, -70.25);
    assert.ok(Math.abs(position.speed - 20) < 0.01);
    assert.deepEqual([position.course, position.altitude, position.attributes['alarm']], [181, 500, 'sos']);
  });

  it('encodes Traccar\'s instructions in a CS envelope', () => {
    const context = { uniqueId: '9300000001', sequence: 1, now: NOW };
    const encode = (type: 'custom' | 'positionSingle' | 'positionPeriodic' | 'sosNumber' | 'rebootDevice' | 'engineStop', attributes: Record<string, unknown> = {}) =>
      watchCommands.encode({ type, attributes }, context).toString('latin1');
    assert.equal(encode('positionSingle'), '[CS*9300000001*0002*CR]');
    assert.equal(encode('positionPeriodic', { frequency: 60 }), '[CS*9300000001*0009*UPLOAD,60]');
    assert.equal(encode('sosNumber', { index: 1, phone: '+4930123' }), '[CS*9300000001*000d*SOS1,+4930123]');
    assert.equal(encode('rebootDevice'), '[CS*9300000001*0005*RESET]');
    assert.equal(encode('custom', { data: 'FIND' }), '[CS*9300000001*0004*FIND]');
    assert.throws(() => encode('custom', { data: 'a]b' }), ProtocolError);
    assert.throws(() => encode('engineStop'), ProtocolError);
  });
});

describe('watch fuzzing', () => {
  it('decodes random and mutated frames safely, with no position from a frame whose type is not a location', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      decodeStream(watchProtocol, Buffer.concat([Buffer.from('['), bytes.filter((byte) => byte !== 0x5b && byte !== 0x5d), Buffer.from(']')]));
    }), { numRuns: 2000 });
    const field = fc.oneof(fc.constantFrom('', 'A', 'V', 'N', 'S', 'E', 'W', '00010000'), fc.stringMatching(/^-?\d{0,9}(\.\d{0,7})?$/), fc.string({ maxLength: 6 }));
    fc.assert(fc.property(fc.constantFrom('UD', 'AL', 'WT', 'LK', 'INIT', 'bphrt', 'oxygen', 'temp', 'TK', 'JXTK', 'img', 'X'), fc.array(field, { maxLength: 24 }), (type, fields) => {
      const content = `${type},${fields.join(',')}`.replace(/[[\]}]/g, '');
      const messages = decodeStream(watchProtocol, Buffer.from(`[3G*1234567890*${content.length.toString(16).padStart(4, '0')}*${content}]`, 'latin1'));
      if (!['UD', 'AL', 'WT'].includes(type)) assert.ok(messages.every((message) => message.positions.length === 0));
    }), { numRuns: 2000 });
    const frames = [UD, UD_WITH_INDEX, AL_SOS, LK, VOICE.toString('latin1')].map((frame) => Buffer.from(frame, 'latin1'));
    fc.assert(fc.property(fc.constantFrom(...frames), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0x20, max: 0x7e })), { minLength: 1, maxLength: 6 }), (frame, changes) => {
      const mutated = Buffer.from(frame);
      for (const [index, value] of changes) mutated[1 + (index % (mutated.length - 2))] = value;
      decodeStream(watchProtocol, mutated);
    }), { numRuns: 2000 });
  });
});
