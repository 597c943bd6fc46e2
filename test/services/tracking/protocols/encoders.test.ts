import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { DeviceFix } from '../../../../src/services/tracking/protocols/simulated-tracker.ts';
import { gt06Location, gt06Login } from '../../../../src/services/tracking/protocols/gt06/simulator.ts';
import { h02Location } from '../../../../src/services/tracking/protocols/h02/simulator.ts';
import { osmAndQuery } from '../../../../src/services/tracking/protocols/osmand/simulator.ts';
import { teltonikaAvlPacket, teltonikaHandshake } from '../../../../src/services/tracking/protocols/teltonika/simulator.ts';
import { gt06Protocol } from '../../../../src/services/tracking/protocols/gt06/decoder.ts';
import { h02Protocol } from '../../../../src/services/tracking/protocols/h02/decoder.ts';
import { decodeOsmAnd } from '../../../../src/services/tracking/protocols/osmand/decoder.ts';
import { teltonikaProtocol } from '../../../../src/services/tracking/protocols/teltonika/decoder.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, TcpProtocol } from '../../../../src/services/tracking/protocols/types.ts';

const NOW = new Date('2025-06-01T12:00:00Z');

const FIX: DeviceFix = {
  time: new Date('2025-06-01T11:59:58Z'),
  latitude: -33.8688,
  longitude: 151.2093,
  altitude: 58,
  speed: 27,
  course: 271,
  valid: true,
  ignition: true,
  motion: true,
  odometer: 123_456,
};

function decodeAll(protocol: TcpProtocol, bytes: Buffer, state: ConnectionState = {}): DecodedMessage[] {
  const { frames, consumed } = protocol.splitFrames(bytes, state);
  assert.equal(consumed, bytes.length, 'every byte belongs to a frame');
  return frames.map((frame) => protocol.decode(frame, state, NOW));
}

/** The decoded fix matches what was encoded, within each protocol's resolution. */
function assertSameFix(position: DecodedPosition | undefined, fix: DeviceFix, tolerance: { degrees: number; knots: number }): void {
  assert.ok(position, 'a position');
  assert.equal(position.fixTime.getTime(), Math.floor(fix.time.getTime() / 1000) * 1000);
  assert.equal(position.valid, fix.valid);
  assert.ok(Math.abs(position.latitude - fix.latitude) <= tolerance.degrees, `latitude ${position.latitude} vs ${fix.latitude}`);
  assert.ok(Math.abs(position.longitude - fix.longitude) <= tolerance.degrees, `longitude ${position.longitude} vs ${fix.longitude}`);
  assert.ok(Math.abs(position.speed - fix.speed) <= tolerance.knots, `speed ${position.speed} vs ${fix.speed}`);
  assert.equal(position.course, Math.round(fix.course) % 360);
}

const fixes = fc.record({
  time: fc.integer({ min: Date.UTC(2001, 0, 1), max: Date.UTC(2098, 11, 31) }).map((ms) => new Date(Math.floor(ms / 1000) * 1000)),
  latitude: fc.double({ min: -89.9, max: 89.9, noNaN: true }),
  longitude: fc.double({ min: -179.9, max: 179.9, noNaN: true }),
  altitude: fc.integer({ min: -400, max: 9000 }),
  speed: fc.double({ min: 0, max: 130, noNaN: true }),
  course: fc.integer({ min: 0, max: 359 }),
  valid: fc.boolean(),
  ignition: fc.option(fc.boolean(), { nil: undefined }),
  odometer: fc.option(fc.integer({ min: 0, max: 2 ** 31 }), { nil: undefined }),
});

describe('protocol encoders (what the simulator sends) decode with our decoders', () => {
  it('Teltonika: handshake, then a Codec 8 packet of several records, acknowledged with the count', () => {
    const state: ConnectionState = {};
    const second = { ...FIX, time: new Date(FIX.time.getTime() + 1000), ignition: false, sos: true, odometer: undefined };
    const [login, data] = decodeAll(teltonikaProtocol, Buffer.concat([teltonikaHandshake('356307042441013'), teltonikaAvlPacket([FIX, second])]), state);
    assert.equal(login?.uniqueId, '356307042441013');
    assert.equal(data?.positions.length, 2);
    assertSameFix(data?.positions[0], FIX, { degrees: 1e-7, knots: 0.3 });
    assert.equal(data?.positions[0]?.altitude, 58);
    assert.equal(data?.positions[0]?.attributes.ignition, true);
    assert.equal(data?.positions[0]?.attributes.motion, true);
    assert.equal(data?.positions[0]?.attributes.odometer, 123_456);
    assert.equal(data?.positions[1]?.attributes.ignition, false);
    assert.equal(data?.positions[1]?.attributes.alarm, 'general');
    assert.deepEqual(data?.ack, Buffer.from([0, 0, 0, 2]));
    assert.throws(() => teltonikaAvlPacket([]), RangeError);
  });

  it('Teltonika: any fix survives the round trip', () => {
    fc.assert(
      fc.property(fixes, (fix) => {
        const [message] = decodeAll(teltonikaProtocol, teltonikaAvlPacket([fix]), { teltonikaHandshakeDone: true });
        // No satellites means an invalid fix, still a position.
        assertSameFix(message?.positions[0], fix, { degrees: 1e-7, knots: 0.3 });
      }),
    );
  });

  it('GT06: login, location with ignition and odometer, and an SOS location', () => {
    const state: ConnectionState = {};
    const sos = { ...FIX, sos: true };
    const [login, location, alarm] = decodeAll(gt06Protocol, Buffer.concat([gt06Login('359710049095095', 1), gt06Location(FIX, 2), gt06Location(sos, 3)]), state);
    assert.equal(login?.uniqueId, '359710049095095');
    assert.ok(login?.ack, 'the login is acknowledged');
    assertSameFix(location?.positions[0], FIX, { degrees: 1e-6, knots: 0.3 });
    assert.equal(location?.positions[0]?.attributes.ignition, true);
    assert.equal(location?.positions[0]?.attributes.odometer, 123_456);
    assert.ok(location?.ack);
    assertSameFix(alarm?.positions[0], sos, { degrees: 1e-6, knots: 0.3 });
    assert.equal(alarm?.positions[0]?.attributes.alarm, 'sos');
    assert.throws(() => gt06Login('123', 1), RangeError);
  });

  it('GT06: any fix survives the round trip', () => {
    fc.assert(
      fc.property(fixes, fc.integer({ min: 0, max: 0xffff }), (fix, serial) => {
        const [message] = decodeAll(gt06Protocol, gt06Location(fix, serial));
        assertSameFix(message?.positions[0], fix, { degrees: 1e-6, knots: 0.3 });
      }),
    );
  });

  it('H02: a V1 location with ignition, then SOS; the server echoes V4', () => {
    const [location, alarm] = decodeAll(h02Protocol, Buffer.concat([h02Location('4210051415', FIX), h02Location('4210051415', { ...FIX, ignition: false, sos: true })]));
    assert.equal(location?.uniqueId, '4210051415');
    assertSameFix(location?.positions[0], FIX, { degrees: 1e-5, knots: 0.005 });
    assert.equal(location?.positions[0]?.attributes.ignition, true);
    assert.equal(location?.positions[0]?.attributes.alarm, undefined);
    assert.match(location?.ack?.toString() ?? '', /^\*HQ,4210051415,V4,V1,\d{14}#$/);
    assert.equal(alarm?.positions[0]?.attributes.ignition, false);
    assert.equal(alarm?.positions[0]?.attributes.alarm, 'sos');
  });

  it('H02: any fix survives the round trip', () => {
    fc.assert(
      fc.property(fixes, (fix) => {
        const [message] = decodeAll(h02Protocol, h02Location('1234567890', fix));
        assertSameFix(message?.positions[0], fix, { degrees: 1e-5, knots: 0.005 });
      }),
    );
  });

  it('OsmAnd: the query string decodes to the same fix and attributes', () => {
    const query = Object.fromEntries(new URLSearchParams(osmAndQuery('phone-1', { ...FIX, sos: true })));
    const message = decodeOsmAnd({ query }, NOW);
    assert.equal(message.uniqueId, 'phone-1');
    assertSameFix(message.positions[0], FIX, { degrees: 1e-12, knots: 1e-12 });
    assert.equal(message.positions[0]?.altitude, 58);
    assert.equal(message.positions[0]?.attributes.ignition, true);
    assert.equal(message.positions[0]?.attributes.motion, true);
    assert.equal(message.positions[0]?.attributes.odometer, 123_456);
    assert.equal(message.positions[0]?.attributes.alarm, 'sos');
  });
});
