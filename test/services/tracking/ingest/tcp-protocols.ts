import assert from 'node:assert/strict';
import { galileoTracker } from '../../../../src/services/tracking/protocols/galileo/simulator.ts';
import { gl200Tracker } from '../../../../src/services/tracking/protocols/gl200/simulator.ts';
import { gps103Tracker } from '../../../../src/services/tracking/protocols/gps103/simulator.ts';
import { gt06Tracker } from '../../../../src/services/tracking/protocols/gt06/simulator.ts';
import { meitrackTracker } from '../../../../src/services/tracking/protocols/meitrack/simulator.ts';
import { ruptelaTracker } from '../../../../src/services/tracking/protocols/ruptela/simulator.ts';
import { suntechTracker } from '../../../../src/services/tracking/protocols/suntech/simulator.ts';
import { h02Tracker } from '../../../../src/services/tracking/protocols/h02/simulator.ts';
import { jt808Tracker } from '../../../../src/services/tracking/protocols/jt808/simulator.ts';
import { teltonikaTracker } from '../../../../src/services/tracking/protocols/teltonika/simulator.ts';
import { tk103Tracker } from '../../../../src/services/tracking/protocols/tk103/simulator.ts';
import { watchTracker } from '../../../../src/services/tracking/protocols/watch/simulator.ts';
import { wialonTracker } from '../../../../src/services/tracking/protocols/wialon/simulator.ts';
import type { DeviceFix, SimulatedTracker } from '../../../../src/services/tracking/protocols/simulated-tracker.ts';
import type { DeviceProtocol } from '../../../../src/services/tracking/protocols/registry.ts';
import type { DeviceConnection } from './support.ts';

/**
 * A device TCP protocol as the shared socket scenarios drive it (tcp.test.ts): how a device logs
 * in and sends a position (its simulated tracker's frames), and what the server answers. A new protocol is one more row.
 */
export interface TcpProtocolCase {
  /** The protocol's name, as stored on positions and given to `ingestion.listen`. */
  protocol: Exclude<DeviceProtocol, 'osmand'>;
  /** The unique id of this protocol's `n`-th test device, in the protocol's own id format. */
  uniqueId(n: number): string;
  /** The login frame; undefined where the device names itself in every message instead. */
  login(uniqueId: string): Buffer | undefined;
  /** Reads the answer to an accepted login and checks it (nothing to read where there is no login). */
  readLoginAccepted(connection: DeviceConnection): Promise<void>;
  /** What the server answers to a refused login before it closes. */
  refusal: Buffer;
  /** One position message; `serial` is the message's sequence number where the protocol has one. */
  position(uniqueId: string, fix: DeviceFix, serial: number): Buffer;
  /**
   * Reads the acknowledgement of the position message `serial` and checks it; undefined for a protocol whose devices
   * get no answer at all (Suntech), where the scenarios wait for the position to be stored instead.
   */
  readPositionAck?(connection: DeviceConnection, serial: number): Promise<void>;
  /** The message with its checksum spoiled, which the server keeps as Traccar does; absent without a checksum. */
  spoilChecksum?(message: Buffer): Buffer;
}

/** Flips the bits of the byte `fromEnd` bytes before the end of a copy of `message`. */
function flipped(message: Buffer, fromEnd: number): Buffer {
  const copy = Buffer.from(message);
  copy[copy.length - fromEnd] = copy[copy.length - fromEnd]! ^ 0xff;
  return copy;
}

const GT06_ACK_LENGTH = 10;

/** One JT808 server message: from its opening 0x7e to its closing one, escapes undone. */
export async function readJt808(connection: DeviceConnection): Promise<Buffer> {
  assert.deepEqual(await connection.read(1), Buffer.from([0x7e]));
  const rest = Buffer.from(await connection.readText('~'), 'latin1');
  return Buffer.from(rest.subarray(0, -1).toString('hex').replace(/7d02/g, '7e').replace(/7d01/g, '7d'), 'hex');
}

/** The frames of a protocol's simulated tracker, as the socket scenarios send them: one login message, or none. */
function framesOf(tracker: SimulatedTracker): Pick<TcpProtocolCase, 'uniqueId' | 'login' | 'position'> {
  return {
    uniqueId: (n) => tracker.uniqueId(n),
    login: (uniqueId) => {
      const frames = tracker.login(uniqueId, 1);
      return frames.length === 0 ? undefined : Buffer.concat(frames);
    },
    position: (uniqueId, fix, serial) => tracker.report(uniqueId, fix, serial),
  };
}

export const TCP_PROTOCOLS: readonly TcpProtocolCase[] = [
  {
    protocol: 'teltonika',
    ...framesOf(teltonikaTracker),
    readLoginAccepted: async (connection) => assert.deepEqual(await connection.read(1), Buffer.from([1])),
    refusal: Buffer.from([0]),
    // The ACK is the packet's record count, here one.
    readPositionAck: async (connection) => assert.deepEqual(await connection.read(4), Buffer.from([0, 0, 0, 1])),
    spoilChecksum: (message) => flipped(message, 1), // the low byte of the CRC word
  },
  {
    protocol: 'gt06',
    ...framesOf(gt06Tracker),
    readLoginAccepted: async (connection) => {
      const ack = await connection.read(GT06_ACK_LENGTH);
      assert.deepEqual([ack[3], ack.readUInt16BE(4)], [0x01, 1]);
    },
    refusal: Buffer.alloc(0),
    // The ACK echoes the message type and its serial.
    readPositionAck: async (connection, serial) => {
      const ack = await connection.read(GT06_ACK_LENGTH);
      assert.deepEqual([ack[3], ack.readUInt16BE(4)], [0x22, serial]);
    },
    spoilChecksum: (message) => flipped(message, 3), // the low byte of the CRC, before 0D0A
  },
  {
    protocol: 'h02',
    ...framesOf(h02Tracker),
    readLoginAccepted: async () => undefined,
    refusal: Buffer.alloc(0),
    // A V1 location is echoed as V4.
    readPositionAck: async (connection) => assert.match(await connection.readText('#'), /^\*HQ,\d+,V4,V1,\d{14}#$/),
  },
  {
    protocol: 'jt808',
    ...framesOf(jt808Tracker),
    readLoginAccepted: async (connection) => {
      const registered = await readJt808(connection);
      assert.deepEqual([registered.readUInt16BE(0), registered.readUInt16BE(12), registered[14]], [0x8100, 1, 0]);
      const authenticated = await readJt808(connection);
      assert.deepEqual([authenticated.readUInt16BE(0), authenticated.readUInt16BE(12), authenticated.readUInt16BE(14)], [0x8001, 2, 0x0102]);
    },
    refusal: Buffer.alloc(0),
    // A general response 0x8001 echoing the serial and type of the report, result 0 (success).
    readPositionAck: async (connection, serial) => {
      const ack = await readJt808(connection);
      assert.deepEqual([ack.readUInt16BE(0), ack.readUInt16BE(12), ack.readUInt16BE(14), ack[16]], [0x8001, serial, 0x0200, 0]);
    },
  },
  {
    protocol: 'gps103',
    ...framesOf(gps103Tracker),
    readLoginAccepted: async (connection) => assert.equal((await connection.read(4)).toString(), 'LOAD'),
    refusal: Buffer.alloc(0),
    readPositionAck: async (connection) => assert.equal((await connection.read(2)).toString(), 'ON'),
  },
  {
    protocol: 'tk103',
    ...framesOf(tk103Tracker),
    readLoginAccepted: async (connection) => assert.match(await connection.readText(')'), /^\(\d{12}AP01HSO\)$/),
    refusal: Buffer.alloc(0),
    readPositionAck: async (connection) => assert.match(await connection.readText(')'), /^\(\d{12}AP05\)$/),
  },
  {
    protocol: 'wialon',
    ...framesOf(wialonTracker),
    readLoginAccepted: async (connection) => assert.equal(await connection.readText('\r\n'), '#AL#1\r\n'),
    refusal: Buffer.alloc(0),
    readPositionAck: async (connection) => assert.equal(await connection.readText('\r\n'), '#AD#1\r\n'),
  },
  {
    protocol: 'watch',
    ...framesOf(watchTracker),
    readLoginAccepted: async (connection) => assert.match(await connection.readText(']'), /^\[3G\*\d{10}\*0002\*LK\]$/),
    refusal: Buffer.alloc(0),
    readPositionAck: async (connection) => assert.match(await connection.readText(']'), /^\[3G\*\d{10}\*0002\*LK\]$/),
  },
  {
    protocol: 'meitrack',
    ...framesOf(meitrackTracker),
    readLoginAccepted: async () => undefined,
    refusal: Buffer.alloc(0),
    readPositionAck: async (connection) => assert.match(await connection.readText('\r\n'), /^@@z27,\d{15},AAC,1\*[0-9A-F]{2}\r\n$/),
  },
  {
    protocol: 'suntech',
    ...framesOf(suntechTracker),
    readLoginAccepted: async () => undefined,
    refusal: Buffer.alloc(0),
  },
  {
    protocol: 'gl200',
    ...framesOf(gl200Tracker),
    readLoginAccepted: async () => undefined,
    refusal: Buffer.alloc(0),
    readPositionAck: async (connection, serial) =>
      assert.equal(await connection.readText('$'), `+SACK:GTHBD,1A0800,${serial.toString(16).toUpperCase().padStart(4, '0')}$`),
  },
  {
    protocol: 'ruptela',
    ...framesOf(ruptelaTracker),
    readLoginAccepted: async (connection) => assert.deepEqual(await connection.read(6), Buffer.from('00027301cb25', 'hex')),
    refusal: Buffer.alloc(0),
    // One fixed answer for every records message.
    readPositionAck: async (connection) => assert.deepEqual(await connection.read(6), Buffer.from('0002640113bc', 'hex')),
  },
  {
    protocol: 'galileo',
    ...framesOf(galileoTracker),
    // Every packet is answered 0x02 and its own checksum.
    readLoginAccepted: async (connection) => assert.equal((await connection.read(3))[0], 0x02),
    refusal: Buffer.alloc(0),
    readPositionAck: async (connection) => assert.equal((await connection.read(3))[0], 0x02),
  },
];

/** What a device sends first: its login, or where there is none its first position. */
export function identification(row: TcpProtocolCase, uniqueId: string, fix: DeviceFix): Buffer {
  return row.login(uniqueId) ?? row.position(uniqueId, fix, 1);
}
