import assert from 'node:assert/strict';
import { gt06Location, gt06Login, h02Location, teltonikaAvlPacket, teltonikaHandshake } from '../../../../src/services/tracking/protocols/encoders.ts';
import type { DeviceFix } from '../../../../src/services/tracking/protocols/encoders.ts';
import type { DeviceConnection } from './support.ts';

/**
 * A device TCP protocol as the shared socket scenarios drive it (tcp.test.ts): how a device logs
 * in, how it sends a position, and what the server answers. A new protocol is one more row.
 */
export interface TcpProtocolCase {
  /** The protocol's name, as stored on positions and given to `ingestion.listen`. */
  protocol: 'teltonika' | 'gt06' | 'h02';
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
  /** Reads the acknowledgement of the position message `serial` and checks it. */
  readPositionAck(connection: DeviceConnection, serial: number): Promise<void>;
}

const GT06_ACK_LENGTH = 10;

export const TCP_PROTOCOLS: readonly TcpProtocolCase[] = [
  {
    protocol: 'teltonika',
    uniqueId: (n) => `35630704245${String(n).padStart(4, '0')}`,
    login: teltonikaHandshake,
    readLoginAccepted: async (connection) => assert.deepEqual(await connection.read(1), Buffer.from([1])),
    refusal: Buffer.from([0]),
    position: (_uniqueId, fix) => teltonikaAvlPacket([fix]),
    // The ACK is the packet's record count, here one.
    readPositionAck: async (connection) => assert.deepEqual(await connection.read(4), Buffer.from([0, 0, 0, 1])),
  },
  {
    protocol: 'gt06',
    uniqueId: (n) => `35971004909${String(n).padStart(4, '0')}`,
    login: (uniqueId) => gt06Login(uniqueId, 1),
    readLoginAccepted: async (connection) => {
      const ack = await connection.read(GT06_ACK_LENGTH);
      assert.deepEqual([ack[3], ack.readUInt16BE(4)], [0x01, 1]);
    },
    refusal: Buffer.alloc(0),
    position: (_uniqueId, fix, serial) => gt06Location(fix, serial),
    // The ACK echoes the message type and its serial.
    readPositionAck: async (connection, serial) => {
      const ack = await connection.read(GT06_ACK_LENGTH);
      assert.deepEqual([ack[3], ack.readUInt16BE(4)], [0x22, serial]);
    },
  },
  {
    protocol: 'h02',
    uniqueId: (n) => `421006${String(n).padStart(4, '0')}`,
    login: () => undefined,
    readLoginAccepted: async () => undefined,
    refusal: Buffer.alloc(0),
    position: (uniqueId, fix) => h02Location(uniqueId, fix),
    // A V1 location is echoed as V4.
    readPositionAck: async (connection) => assert.match(await connection.readText('#'), /^\*HQ,\d+,V4,V1,\d{14}#$/),
  },
];

/** What a device sends first: its login, or where there is none its first position. */
export function identification(row: TcpProtocolCase, uniqueId: string, fix: DeviceFix): Buffer {
  return row.login(uniqueId) ?? row.position(uniqueId, fix, 1);
}
