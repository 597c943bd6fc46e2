import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crc16Ibm, crc16X25 } from '../../../../src/services/tracking/protocols/checksum.ts';
import { gps103Tracker } from '../../../../src/services/tracking/protocols/gps103/simulator.ts';
import { jt808Location, jt808Tracker } from '../../../../src/services/tracking/protocols/jt808/simulator.ts';
import { COMMAND_TYPES } from '../../../../src/services/tracking/protocols/command-types.ts';
import type { CommandType, DeviceCommand } from '../../../../src/services/tracking/protocols/command-types.ts';
import { PROTOCOL_REGISTRY } from '../../../../src/services/tracking/protocols/registry.ts';
import { gt06CommandFrame, gt06Commands } from '../../../../src/services/tracking/protocols/gt06/commands.ts';
import { gt06Protocol } from '../../../../src/services/tracking/protocols/gt06/decoder.ts';
import { h02Commands } from '../../../../src/services/tracking/protocols/h02/commands.ts';
import { h02Protocol } from '../../../../src/services/tracking/protocols/h02/decoder.ts';
import { jt808Protocol } from '../../../../src/services/tracking/protocols/jt808/decoder.ts';
import { teltonikaCommands } from '../../../../src/services/tracking/protocols/teltonika/commands.ts';
import { teltonikaProtocol } from '../../../../src/services/tracking/protocols/teltonika/decoder.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW, assertSameFramesHoweverChunked, hex } from './protocol-test-helpers.ts';

// Frames published in Traccar's Gt06/Teltonika/H02 encoder and decoder tests.
const GT06_ENGINE_STOP = '787812800c0000000052656c61792c312300009dee0d0a';
const GT06_ANSWER = '78782d152500000000437574206f666620746865206675656c20737570706c793a2053756363657373210002013b898a0d0a';
const GT06_ANSWER_UTF16 = '797900262100000000020043006f006d006d0061006e00640020006500720072006f0072002100236e850d0a';
const TELTONIKA_CUSTOM_TEXT = '00000000000000140c01050000000c7365746469676f7574203131010000bed5';
const TELTONIKA_CUSTOM_HEX = '00000000000000100c01050000000803030000000185e8010000da8b';
const TELTONIKA_ANSWER = '000000000000002d0c01060000002523464d323d3236323033323736313732313339362c32363230332c30372e30322e30350d0a0100009a2e';
const TELTONIKA_BINARY_ANSWER = '00000000000000100C010600000008010300010015D5C5010000D988';
const TELTONIKA_CODEC13_DRIVER = '00000000000000240d01060000001c642b3ad14754534c7c367c317c307c31323734393838347c317c0d0a010000ec11';
const TELTONIKA_CAMERA = '00000000000000090c010D00000001000100000CD8';
const H02_V4_DONE = '*TH,2020916012,V4,S20,DONE,130305,050316,A,2212.8745,N,11346.6574,E,14.28,028,220902,F7FFFBFF#';

const command = (type: CommandType, attributes: Record<string, unknown> = {}): DeviceCommand => ({ type, attributes });
const AT_010203 = new Date('2024-01-02T01:02:03Z');
const context = (sequence = 0) => ({ uniqueId: '123456789012345', sequence, now: AT_010203 });

describe('gt06 commands', () => {
  it('writes engineStop as Traccar does, the sequence in the server flag', () => {
    assert.deepEqual(gt06Commands.encode(command('engineStop'), context(0)), hex(GT06_ENGINE_STOP));
    const frame = gt06Commands.encode(command('engineResume'), context(0x01020304));
    assert.equal(frame.subarray(5, 9).toString('hex'), '01020304');
    assert.equal(frame.subarray(9, frame.length - 6).toString('latin1'), 'Relay,0#');
  });

  it('writes custom text as it is and refuses text beyond one short frame', () => {
    const frame = gt06Commands.encode(command('custom', { data: 'WHERE#' }), context(7));
    assert.equal(frame.subarray(9, frame.length - 6).toString('latin1'), 'WHERE#');
    assert.throws(() => gt06CommandFrame('x'.repeat(246), 1, 1), ProtocolError);
    assert.equal(gt06CommandFrame('x'.repeat(245), 1, 1).length, 260);
  });

  it('reads the answer with its server flag (0x15 and 0x21)', () => {
    const answer = gt06Protocol.decode(hex(GT06_ANSWER), {}, NOW);
    assert.deepEqual(answer.statuses, [{ deviceTime: null, attributes: { result: 'Cut off the fuel supply: Success!' } }]);
    assert.equal(answer.answerTo, 0);
    assert.ok(answer.ack);
    const utf16 = gt06Protocol.decode(hex(GT06_ANSWER_UTF16), {}, NOW);
    assert.deepEqual(utf16.statuses[0]?.attributes, { result: 'Command error!' });
    assert.equal(utf16.answerTo, 0);
  });

  it('answers carry back the server flag the command was written with', () => {
    const command80 = gt06CommandFrame('Relay,1#', 0xdeadbeef, 3);
    // The device copies the flag into its 0x15 answer: same layout after the type byte.
    const answer = Buffer.from(command80);
    answer[3] = 0x15;
    answer.writeUInt16BE(crcOf(answer), answer.length - 4);
    assert.equal(gt06Protocol.decode(answer, {}, NOW).answerTo, 0xdeadbeef);
  });
});

function u32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32BE(value);
  return buffer;
}

function crcOf(frame: Buffer): number {
  return crc16X25(frame.subarray(2, frame.length - 4));
}

describe('teltonika codec 12 commands', () => {
  it('writes custom text and hex data as Traccar does', () => {
    assert.deepEqual(teltonikaCommands.encode(command('custom', { data: 'setdigout 11' }), context()), hex(TELTONIKA_CUSTOM_TEXT));
    assert.deepEqual(teltonikaCommands.encode(command('custom', { data: '03030000000185E8' }), context()), hex(TELTONIKA_CUSTOM_HEX));
  });

  it('writes engineStop and engineResume as setdigout', () => {
    const stop = teltonikaCommands.encode(command('engineStop'), context());
    assert.equal(stop.subarray(15, stop.length - 5).toString('latin1'), 'setdigout 1');
    const resume = teltonikaCommands.encode(command('engineResume'), context());
    assert.equal(resume.subarray(15, resume.length - 5).toString('latin1'), 'setdigout 0');
  });

  it('reads codec 12 responses (text, and hex when not printable) without acknowledging them', () => {
    const state = { teltonikaHandshakeDone: true };
    const text = teltonikaProtocol.decode(hex(TELTONIKA_ANSWER), state, NOW);
    assert.deepEqual(text.statuses, [{ deviceTime: null, attributes: { result: '#FM2=262032761721396,26203,07.02.05' } }]);
    assert.equal(text.ack, undefined);
    assert.equal(text.answerTo, undefined);
    const binary = teltonikaProtocol.decode(hex(TELTONIKA_BINARY_ANSWER), state, NOW);
    assert.deepEqual(binary.statuses[0]?.attributes, { result: '010300010015d5c5' });
  });

  it('reads codec 13 answers with the device time, and ignores camera packets', () => {
    // Codec 13: type, size (timestamp included), seconds since 1970, text.
    const payload = Buffer.concat([Buffer.from('56e92422', 'hex'), Buffer.from('#GET DATAORDER\r\n')]);
    const data = Buffer.concat([Buffer.from([0x0d, 1, 6]), u32(payload.length), payload, Buffer.from([1])]);
    const frame = Buffer.concat([u32(0), u32(data.length), data, u32(crc16Ibm(data))]);
    const message = teltonikaProtocol.decode(frame, { teltonikaHandshakeDone: true }, NOW);
    assert.deepEqual(message.statuses, [{ deviceTime: new Date(0x56e92422 * 1000), attributes: { result: '#GET DATAORDER' } }]);
    const driver = teltonikaProtocol.decode(hex(TELTONIKA_CODEC13_DRIVER), { teltonikaHandshakeDone: true }, NOW);
    assert.deepEqual(driver.statuses[0]?.attributes, { driverUniqueId: '12749884' });
    assert.deepEqual(teltonikaProtocol.decode(hex(TELTONIKA_CAMERA), { teltonikaHandshakeDone: true }, NOW).statuses, []);
  });

  it('splits answers from a stream however it is chunked', () => {
    assertSameFramesHoweverChunked(teltonikaProtocol, [Buffer.concat([Buffer.from('000f', 'hex'), Buffer.from('356307042441013')]), hex(TELTONIKA_ANSWER), hex(TELTONIKA_CODEC13_DRIVER)]);
  });

  it('refuses a response whose count does not match', () => {
    const bad = hex(TELTONIKA_ANSWER);
    bad[bad.length - 5] = 2;
    assert.throws(() => teltonikaProtocol.decode(bad, { teltonikaHandshakeDone: true }, NOW), ProtocolError);
  });
});

describe('h02 instructions', () => {
  it('writes the instructions as Traccar does', () => {
    const encode = (type: CommandType, attributes: Record<string, unknown> = {}) => h02Commands.encode(command(type, attributes), context()).toString('latin1');
    assert.equal(encode('alarmArm'), '*HQ,123456789012345,SCF,010203,0,0#');
    assert.equal(encode('alarmDisarm'), '*HQ,123456789012345,SCF,010203,1,1#');
    assert.equal(encode('engineStop'), '*HQ,123456789012345,S20,010203,1,1#');
    assert.equal(encode('engineResume'), '*HQ,123456789012345,S20,010203,1,0#');
    assert.equal(encode('positionPeriodic', { frequency: 10 }), '*HQ,123456789012345,S71,010203,22,10#');
    assert.equal(encode('custom', { data: '*HQ,123456789012345,R1,010203#' }), '*HQ,123456789012345,R1,010203#');
  });

  it('reads the V4 reply as the result beside its location', () => {
    const message = h02Protocol.decode(Buffer.from(H02_V4_DONE, 'latin1'), {}, NOW);
    assert.equal(message.positions[0]?.attributes['result'], 'S20,DONE,130305');
  });
});

describe('protocol command support', () => {
  it('each TCP protocol declares what it sends; an encoder refuses a type it does not support', () => {
    assert.deepEqual(gt06Protocol.commands?.supports, ['custom', 'engineStop', 'engineResume']);
    assert.ok(teltonikaProtocol.commands?.supports.includes('custom'));
    assert.ok(h02Protocol.commands?.supports.includes('positionPeriodic'));
    assert.throws(() => gt06Commands.encode(command('rebootDevice'), context()), ProtocolError);
  });
});

describe('checking a command apart from encoding it', () => {
  /** Commands that the type's own rules (commands/validation.ts) let through, some of which a protocol cannot carry. */
  const CANDIDATES: DeviceCommand[] = [
    ...COMMAND_TYPES.map((type) => command(type)),
    command('custom', { data: 'Relay,1#' }), command('custom', { data: '0a0b0c' }), command('custom', { data: 'AT+GTRTO=gl200,1$' }),
    command('custom', { data: 'a;b' }), command('custom', { data: 'a)b' }), command('custom', { data: 'a]b' }), command('custom', { data: 'A*1' }),
    command('custom', { data: 'x'.repeat(300) }), command('custom', { data: 'x'.repeat(1024) }), command('custom', { data: 'not hex' }),
    ...[1, 30, 3600, 70_000, 86_400].map((frequency) => command('positionPeriodic', { frequency })),
    command('outputControl', { index: 1, data: '1' }), command('outputControl', { index: 200, data: '1' }), command('outputControl', { index: 1, data: 'on' }),
    command('sosNumber', { index: 1, phone: '+4930123456' }), command('sosNumber', { index: 9, phone: '+4930123456' }),
    command('setTimezone', { timezone: 'UTC' }),
  ];

  it('every protocol refuses in its check exactly what it cannot encode, so an accepted send always has a frame', async () => {
    for (const entry of PROTOCOL_REGISTRY) {
      if (!('decoder' in entry)) continue;
      const encoder = (await entry.decoder()).commands;
      if (!encoder) continue;
      const uniqueId = (await entry.simulator()).uniqueId(1);
      for (const candidate of CANDIDATES) {
        const what = `${entry.name} ${candidate.type} ${JSON.stringify(candidate.attributes).slice(0, 40)}`;
        let checked: unknown;
        try {
          encoder.check(candidate);
        } catch (error) {
          checked = error;
        }
        if (checked === undefined) {
          assert.ok(encoder.supports.includes(candidate.type), `${what}: checked, so supported`);
          assert.ok(encoder.encode(candidate, { uniqueId, sequence: 7, now: AT_010203 }).length > 0, what);
        } else {
          assert.ok(checked instanceof ProtocolError, what);
          assert.throws(() => encoder.encode(candidate, { uniqueId, sequence: 7, now: AT_010203 }), ProtocolError, what);
        }
      }
    }
  });
});

describe('the device side (simulator and tests)', () => {
  it('tells a GPS103 command from the ON and LOAD answers, whole or still arriving', () => {
    const stream = Buffer.from('ON**,imei:123456789012345,JON**,imei:123456789012345,C,30s', 'latin1');
    const frames: string[] = [];
    let rest = stream;
    for (let length = gps103Tracker.serverFrameLength!(rest, true); length !== undefined && rest.length > 0; length = gps103Tracker.serverFrameLength!(rest, true)) {
      frames.push(rest.subarray(0, length).toString('latin1'));
      rest = rest.subarray(length);
    }
    assert.deepEqual(frames, ['ON', '**,imei:123456789012345,J', 'ON', '**,imei:123456789012345,C,30s']);
    assert.deepEqual(frames.map((frame) => gps103Tracker.commands!.isCommand(Buffer.from(frame, 'latin1'))), [false, true, false, true]);
    assert.equal(gps103Tracker.serverFrameLength!(Buffer.from('O', 'latin1'), true), undefined);
    assert.equal(gps103Tracker.serverFrameLength!(Buffer.from('**', 'latin1'), true), undefined);
    assert.equal(gps103Tracker.commands!.isCommand(Buffer.from('**,imei:123456789012345,E;', 'latin1')), false, 'the answer to an SOS');
  });

  it('tells a JT808 command from the acknowledgements by its message id', () => {
    const stop = jt808Protocol.commands!.encode(command('engineStop'), context());
    assert.equal(jt808Tracker.serverFrameLength!(Buffer.concat([stop, stop]), true), stop.length);
    assert.equal(jt808Tracker.commands!.isCommand(stop), true);
    const acknowledgement = jt808Protocol.decode(jt808Location('123456789012345', { time: NOW, latitude: 1, longitude: 2, altitude: 0, speed: 0, course: 0, valid: true }, 1), {}, NOW).ack!;
    assert.equal(jt808Tracker.commands!.isCommand(acknowledgement), false);
  });
});
