import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { h02Protocol } from '../../../../src/services/tracking/protocols/h02/decoder.ts';
import type { ConnectionState, DecodedMessage } from '../../../../src/services/tracking/protocols/types.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW, assertCoordinates, assertSameFramesHoweverChunked, decodeStream, hex, assertFix } from './protocol-test-helpers.ts';

// Messages published in Traccar's H02ProtocolDecoderTest and H02FrameDecoderTest.
const V1_WEST = '*HQ,4210051415,V1,164549,A,0956.3869,N,08406.7068,W,000.00,000,221215,FFFFFBFF,712,01,0,0,6#';
const V1_NO_VALIDITY = '*HQ,355488020119695,V1,050418,,2827.61232,N,07703.84822,E,0.00,0,031015,FFFEFBFF#';
const V1_DASHED = '*HQ,1451316409,V1,030149,A,-23-29.0095,S,-46-51.5852,W,2.4,065,070315,FFFFFFFF#';
const V8_SHORT_LONGITUDE = '*HQ,9001000002,V8,213945,A,3542.2043,N,38.6508,W,0.00,170,221025,FBFFF9FF,0,0,0,0,22,31,126,0#';
const V1_PACKED_MINUTES = '*HQ,5905101893,V1,105759,A,37573392,S,145037022,E,000.00,173,280122,FF7FFBFF,,,9059e2c,8232,4#';
const V1_POWER_CUT = '*HQ,4210209006,V1,201812,A,2608.9437,N,08016.2521,W,000.80,000,150317,EFE7F9FF,310,260,0,0,6#';
const V1_SOS = '*HQ,353505220903211,V1,075228,A,5227.5039,N,01032.8443,E,0.00,0,231013,FFFBFFFF,106,14, 201,2173#';
const V1_SENSORS = '*HQ,2130510938,V1,012632,A,0520.0663,N,10028.6324,E,0.286,023,100317,FFFFDFFF,69129336,0,100.0,18,5141,5A20#';
const V1_BATTERY = '*HQ,4210209006,V1,054048,A,2828.2297,N,07733.4332,E,000.5,047,4,080918,EEE7FBDF,4261193,0#';
const V1_NO_DATE = '*HQ,353505220873067,V1,,V,4605.75732,N,01430.73863,E,0.00,0,,FFFFFFEF,125,194,  64,d3#';
const V1_NO_COORDINATES = '*HQ,353505510948929,V1,,V,,N,,E,0.00,0,,FFFFF7FF,f0,a,11a0,c0c6#';
const V4_RESPONSE = '*TH,2020916012,V4,S20,ERROR,130305,050316,A,2212.8745,N,11346.6574,E,14.28,028,220902,FFFFFBFF#';
const V19_SIM = '*HQ,4209951296,V19,214452,A,5201.0178,N,01830.5029,E,000.00,000,200417,,195.63.13.195,89480610500392633029,BFFFFBFF#';
const VP1 = '*hq,356327080425330,VP1,A,2702.7245,S,15251.9311,E,0.48,0.0000,080917#';
const HEARTBEAT = '*HQ,135790246811220,HTBT,100#';
const XT = '*HQ,356327080425330,XT,1,100#';
const NBR = '*HQ,4109179024,NBR,103732,722,310,0,6,8106,32010,23,8101,22007,25,8106,12010,23,8106,22105,22,8101,22012,16,8106,42010,5,100217,FFFFFBFF,5#';
const LINK = '*HQ,1700086468,LINK,180902,15,0,84,0,0,240517,FFFFFBFF#';
const V3 = '*HQ,355488020882405,V3,095426,74001,01,010278,045142,128,-92,02DE,0,X,090517,FFFFFBFF#';
const SMS_TEXT = 'ST906(70SACD)_TQ_V_2.0 2024/06/07\nID:5226073533\nVOLT:12.9V\nGSM:26';
const BINARY_LONG_ID = '2435248308419329301047591808172627335900074412294E024138FEFFFFFFFF01120064BA73005ECC';
const BINARY_SHORT = '2441060116601245431311165035313006004318210e000000fffffbffff0024';
const BINARY_LONG = '24410600082621532131081504419390060740418306000000fffffbfdff0015060000002c02dc0c000000001f';
const TEXT_WITH_LINE_BREAK = '2a48512c3335353438383032303131333931312c56312c3031323934352c412c353233312e37393238332c4e2c30313332342e31303731382c452c302e30352c302c3137303231372c4646464646464646230d0a';

function decodeText(sentence: string, state: ConnectionState = {}): DecodedMessage {
  return h02Protocol.decode(Buffer.from(sentence, 'latin1'), state, NOW);
}

function onlyPosition(sentence: string) {
  const message = decodeText(sentence);
  assert.equal(message.positions.length, 1, 'one position');
  return message.positions[0]!;
}

describe('h02 text locations', () => {
  it('decodes V1, its status word and extra fields, and answers with V4', () => {
    const message = decodeText(V1_WEST);
    assert.equal(message.uniqueId, '4210051415');
    const position = message.positions[0]!;
    assertFix(position, '2015-12-22T16:45:49.000Z', true, 9.93978, -84.11178);
    assert.equal(position.speed, 0);
    assert.deepEqual(position.attributes, {
      ignition: false, status: 0xfffffbff, io1: '712', io2: '01', io3: '0', io4: '0', io5: '6',
    });
    assert.deepEqual(message.ack, Buffer.from('*HQ,4210051415,V4,V1,20240102030405#'));
  });

  it('treats an empty validity as an invalid fix', () => {
    const position = onlyPosition(V1_NO_VALIDITY);
    assertFix(position, '2015-10-03T05:04:18.000Z', false, 28.46021, 77.06414);
  });

  it('reads the coordinate variants: dashed, degrees-less and packed minutes', () => {
    const dashed = onlyPosition(V1_DASHED);
    assert.equal(dashed.fixTime.toISOString(), '2015-03-07T03:01:49.000Z');
    assertCoordinates(dashed, -23.48349, -46.85975);
    assert.equal(dashed.speed, 2.4, 'speed is already in knots');
    assert.equal(dashed.course, 65);
    assert.equal(dashed.attributes['ignition'], true);
    assertCoordinates(onlyPosition(V8_SHORT_LONGITUDE), 35.7034, -0.64418);
    assertCoordinates(onlyPosition(V1_PACKED_MINUTES), -37.95565, 145.0617);
  });

  it('maps active-low status bits to Traccar alarms', () => {
    assert.equal(onlyPosition(V1_POWER_CUT).attributes['alarm'], 'powerCut');
    const sos = onlyPosition(V1_SOS);
    assert.equal(sos.attributes['alarm'], 'sos');
    assert.equal(sos.attributes['ignition'], true);
    assert.equal(sos.attributes['io3'], '201');
    assert.equal(onlyPosition(V1_WEST).attributes['alarm'], undefined);
  });

  it('reads odometer, temperature, fuel and altitude when present', () => {
    const position = onlyPosition(V1_SENSORS);
    assert.equal(position.altitude, 18);
    assert.deepEqual(position.attributes, {
      ignition: true, status: 0xffffdfff, odometer: 69129336, temp1: 0, fuel: 100,
    });
  });

  it('skips a battery field before the date', () => {
    assert.equal(onlyPosition(V1_BATTERY).fixTime.toISOString(), '2018-09-08T05:40:48.000Z');
  });

  it('uses the server time when the message has no date', () => {
    const position = onlyPosition(V1_NO_DATE);
    assert.equal(position.fixTime, NOW);
    assert.equal(position.deviceTime, null);
  });

  it('returns no position when coordinates are missing', () => {
    assert.deepEqual(decodeText(V1_NO_COORDINATES), { uniqueId: '353505510948929', positions: [], statuses: [] });
  });

  it('keeps a V4 command response next to its location, without answering', () => {
    const message = decodeText(V4_RESPONSE);
    const position = message.positions[0]!;
    assert.equal(position.fixTime.toISOString(), '2002-09-22T05:03:16.000Z');
    assert.equal(position.speed, 14.28);
    assert.equal(position.attributes['result'], 'S20,ERROR,130305');
    assert.equal(message.ack, undefined);
  });

  it('finds the status word after SIM information', () => {
    assert.equal(onlyPosition(V19_SIM).attributes['status'], 0xbffffbff);
  });

  it('decodes VP1 with a date and no time', () => {
    const position = onlyPosition(VP1);
    assert.equal(position.fixTime.toISOString(), '2017-09-08T00:00:00.000Z');
    assertCoordinates(position, -27.04541, 152.86552);
    assert.equal(position.speed, 0.48);
  });
});

describe('h02 other text messages', () => {
  it('echoes a heartbeat and keeps its battery level', () => {
    assert.deepEqual(decodeText(HEARTBEAT), {
      uniqueId: '135790246811220',
      positions: [],
      statuses: [{ deviceTime: null, attributes: { batteryLevel: 100 } }],
      ack: Buffer.from('*HQ,135790246811220,HTBT#'),
    });
  });

  it('identifies the device of an XT heartbeat without decoding more', () => {
    assert.deepEqual(decodeText(XT), { uniqueId: '356327080425330', positions: [], statuses: [] });
  });

  it('decodes the NBR cell report as a status and answers it', () => {
    const message = decodeText(NBR);
    assert.deepEqual(message.statuses, [{
      deviceTime: new Date('2017-02-10T10:37:32.000Z'), attributes: { ignition: false, status: 0xfffffbff },
    }]);
    assert.deepEqual(message.ack, Buffer.from('*HQ,4109179024,V4,NBR,20240102030405#'));
  });

  it('decodes LINK counters', () => {
    assert.deepEqual(decodeText(LINK).statuses, [{
      deviceTime: new Date('2017-05-24T18:09:02.000Z'),
      attributes: { rssi: 15, sat: 0, batteryLevel: 84, steps: 0, turnovers: 0, ignition: false, status: 0xfffffbff },
    }]);
  });

  it('decodes V3 as a status report', () => {
    assert.equal(decodeText(V3).statuses[0]!.deviceTime?.toISOString(), '2017-05-09T09:54:26.000Z');
  });

  it('keeps an SMS text as the result', () => {
    assert.deepEqual(decodeText(`*HQ,5226073533,SMS,${SMS_TEXT}#`).statuses, [
      { deviceTime: null, attributes: { result: SMS_TEXT } },
    ]);
  });
});

describe('h02 binary frames', () => {
  it('decodes the 32-byte BCD record', () => {
    const message = h02Protocol.decode(hex(BINARY_SHORT), {}, NOW);
    assert.equal(message.uniqueId, '4106011660');
    const position = message.positions[0]!;
    assertFix(position, '2016-11-13T12:45:43.000Z', true, 50.58855, 4.53035);
    assert.deepEqual(position.attributes, { batteryLevel: 100, ignition: false, status: 0xfffffbff });
    assert.equal(message.ack, undefined);
  });

  it('decodes the 45-byte record', () => {
    const position = h02Protocol.decode(hex(BINARY_LONG), {}, NOW).positions[0]!;
    assert.equal(position.fixTime.toISOString(), '2015-08-31T21:53:21.000Z');
    assertCoordinates(position, 4.69898, -74.06971);
    assert.equal(position.attributes['alarm'], 'sos');
  });

  it('decodes the 42-byte record with a 15-digit id', () => {
    const message = h02Protocol.decode(hex(BINARY_LONG_ID), {}, NOW);
    assert.equal(message.uniqueId, '352483084193293');
    const position = message.positions[0]!;
    assertFix(position, '2017-08-18T10:47:59.000Z', true, 26.45560, 74.68716);
    assert.deepEqual(position.attributes, { ignition: true, status: 0xfeffffff });
  });

  it('rejects a record with a non-BCD field', () => {
    const frame = hex(BINARY_SHORT);
    frame[8] = 0xaa;
    assert.throws(() => h02Protocol.decode(frame, {}, NOW), /bad BCD/);
  });
});

describe('h02 framing', () => {
  it('drops the line break after a text frame', () => {
    const buffer = hex(TEXT_WITH_LINE_BREAK);
    assert.deepEqual(h02Protocol.splitFrames(buffer, {}), {
      frames: [buffer.subarray(0, buffer.length - 2)], consumed: buffer.length,
    });
  });

  it('waits for the end of partial text and binary frames', () => {
    assert.deepEqual(h02Protocol.splitFrames(Buffer.from(V1_WEST.slice(0, 40)), {}), { frames: [], consumed: 0 });
    assert.deepEqual(h02Protocol.splitFrames(hex(BINARY_SHORT).subarray(0, 20), {}), { frames: [], consumed: 0 });
  });

  it('splits a binary and a text frame from one buffer', () => {
    const buffer = Buffer.concat([hex(BINARY_SHORT), Buffer.from(V1_WEST)]);
    const state: ConnectionState = {};
    assert.deepEqual(h02Protocol.splitFrames(buffer, state), {
      frames: [hex(BINARY_SHORT), Buffer.from(V1_WEST)], consumed: buffer.length,
    });
    assert.equal(state.h02BinaryFrameLength, 32);
  });

  it('recognises 45-byte binary frames from their boundaries', () => {
    const state: ConnectionState = {};
    const buffer = Buffer.concat([hex(BINARY_LONG), hex(BINARY_LONG)]);
    assert.equal(h02Protocol.splitFrames(buffer, state).frames.length, 2);
    assert.equal(state.h02BinaryFrameLength, 45);
  });

  it('recognises 42-byte long-id frames, alone in a read or followed by the next frame', () => {
    const alone: ConnectionState = {};
    assert.deepEqual(h02Protocol.splitFrames(hex(BINARY_LONG_ID), alone).frames, [hex(BINARY_LONG_ID)]);
    assert.equal(alone.h02BinaryFrameLength, 42);
    const state: ConnectionState = {};
    const buffer = Buffer.concat([hex(BINARY_LONG_ID), hex(BINARY_LONG_ID), Buffer.from(V1_WEST)]);
    assert.equal(h02Protocol.splitFrames(buffer, state).frames.length, 3);
    assert.equal(state.h02BinaryFrameLength, 42);
  });

  it('throws on garbage and on text without terminator', () => {
    assert.throws(() => h02Protocol.splitFrames(Buffer.from('hello'), {}), ProtocolError);
    assert.throws(() => h02Protocol.splitFrames(Buffer.from(`*HQ,${'1'.repeat(5000)}`), {}), /terminator/);
    assert.throws(() => h02Protocol.decode(Buffer.from('HQ#'), {}, NOW), ProtocolError);
  });

  it('refuses a text frame longer than 4096 bytes even when its # comes later, searching no further', () => {
    const longest = Buffer.from(`*HQ,${'1'.repeat(4096 - 5)}#`);
    assert.deepEqual(h02Protocol.splitFrames(longest, {}).frames, [longest]);
    assert.throws(() => h02Protocol.splitFrames(Buffer.from(`*HQ,${'1'.repeat(4096 - 4)}#`), {}), /terminator within 4096 bytes/);
    assert.throws(() => h02Protocol.splitFrames(Buffer.from(`*HQ,${'1'.repeat(60_000)}#`), {}), /terminator within 4096 bytes/);
  });

  it('gives the same frames however the stream is chunked', () => {
    const stream = [V1_WEST, HEARTBEAT, NBR, XT].map((sentence) => Buffer.from(sentence));
    assertSameFramesHoweverChunked(h02Protocol, stream);
  });
});

describe('h02 fuzzing', () => {
  it('never throws anything but ProtocolError on random bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 120 }), fc.constantFrom(0x2a, 0x24, 0x58), (bytes, marker) => {
      decodeStream(h02Protocol, bytes);
      decodeStream(h02Protocol, Buffer.concat([Buffer.from([marker]), bytes]));
    }), { numRuns: 1000 });
  });

  it('decodes random comma-separated sentences safely', () => {
    const field = fc.oneof(
      fc.constantFrom('', 'A', 'V', 'N', 'S', 'E', 'W', 'V1', 'NBR', 'LINK', 'V3', 'VP1', 'HTBT', 'X', 'FFFFFBFF'),
      fc.stringMatching(/^-?\d{0,9}(\.\d{0,6})?$/),
      fc.stringMatching(/^-\d{1,3}-\d{1,2}\.\d{1,4}$/),
      fc.string({ maxLength: 6 }).filter((text) => !text.includes('#')),
    );
    fc.assert(fc.property(fc.constantFrom('V1', 'V4', 'NBR', 'LINK', 'V3', 'VP1', 'HTBT', 'SMS'),
      fc.array(field, { maxLength: 20 }), (type, fields) => {
        const sentence = `*HQ,123456789012345,${type},${fields.join(',')}#`;
        const [message] = decodeStream(h02Protocol, Buffer.from(sentence, 'latin1'));
        assert.equal(message?.uniqueId, '123456789012345');
      }), { numRuns: 2000 });
  });

  it('decodes random binary records safely', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 62, maxLength: 62 }),
      fc.uint8Array({ minLength: 5, maxLength: 5 }), (digits, raw) => {
        const frame = Buffer.concat([Buffer.from('$'), Buffer.from(digits.join(''), 'hex'), raw]);
        frame[16] = raw[0]!;
        frame[21] = (frame[21]! & 0xf0) | (raw[1]! & 0x0f);
        decodeStream(h02Protocol, frame);
      }), { numRuns: 1000 });
  });
});
