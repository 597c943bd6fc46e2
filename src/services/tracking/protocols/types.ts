// Shared contract of the device-protocol decoders. Decoders are pure: no I/O, no clock (callers pass `now`).

import type { CommandEncoder } from './command-types.ts';

// One location fix reported by a device.
export interface DecodedPosition {
  fixTime: Date; // time of the GPS fix (UTC)
  deviceTime: Date | null; // time stamped by the device clock, null when the message carries none
  valid: boolean; // the device reports the fix as valid
  latitude: number; // degrees, -90..90
  longitude: number; // degrees, -180..180
  altitude: number; // metres
  speed: number; // knots
  course: number; // degrees
  accuracy: number; // metres, 0 when unknown
  // Traccar attribute keys: ignition, motion, odometer (m), power (V), battery (V), batteryLevel (%), sat, hdop,
  // alarm (comma-separated Traccar alarm names), status, event, result, driverUniqueId, charge, rssi, io<N>, ...
  attributes: Record<string, unknown>;
}

// Attributes reported without a usable location (heartbeat, status, alarm without fix, command result).
// The server merges them into a copy of the device's last known position, as Traccar's getLastLocation does.
export interface DecodedStatus {
  deviceTime: Date | null; // time stamped by the device clock, null when the message carries none
  attributes: Record<string, unknown>; // same keys as DecodedPosition.attributes
}

export interface DecodedMessage {
  uniqueId?: string; // set when the message identifies the device (login, IMEI in the message)
  // Other spellings of the same id, tried in order when no device has `uniqueId` (JT808: with and without leading zeros).
  uniqueIdAlternatives?: readonly string[];
  positions: DecodedPosition[]; // may be empty (login, heartbeat)
  statuses: DecodedStatus[]; // attribute-only reports, may be empty
  // Bytes to send back after positions and statuses are durably stored. For a login message send it only when the
  // device is accepted.
  ack?: Buffer;
  // The frame's checksum (or its length or trailer count) did not match, but its content decoded whole: kept, as
  // Traccar keeps it, and counted so a sloppy firmware shows in the metrics.
  checksumMismatch?: boolean;
  // The command sequence a device's answer echoes back (GT06's server flag), where the protocol carries one.
  answerTo?: number;
  // Impossible values the plausibility check replaced (see plausibility.ts), one entry per value, counted in the metrics.
  normalised?: NormalisedValue[];
}

// Why a value was replaced before storage: a course outside [0, 360), a negative speed.
export type NormalisedValue = 'course_out_of_range' | 'negative_speed';

// Per-connection state. The server sets uniqueId once it has accepted the device; decoders never set it.
// The other fields are private to one protocol and are written by that protocol's splitFrames/decode.
export interface ConnectionState {
  uniqueId?: string;
  gt06TimeZoneOffsetMinutes?: number; // time zone declared in a GT06 login, applied to later timestamps
  teltonikaHandshakeDone?: boolean; // the IMEI frame has been split off; only AVL packets and pings follow
  h02BinaryFrameLength?: number; // 32, 42 or 45, fixed per connection once the first binary frame is seen
  watchScan?: { scanned: number; depth: number }; // how far the partial watch frame at the buffer's start was scanned
}

export interface TcpProtocol {
  name: string; // its registry entry's name (registry.ts)
  // Splits a connection's accumulated bytes into whole frames. Returns the frames found and how many bytes they used;
  // leaves a partial frame for the next read. Throws ProtocolError when the buffer starts with bytes that can never be a
  // frame (garbage); garbage after whole frames is left unconsumed so the next call throws.
  splitFrames(buffer: Buffer, state: ConnectionState): { frames: Buffer[]; consumed: number };
  // Decodes one frame. Throws ProtocolError on a bad checksum or malformed content. `now` stands in for the server
  // clock where the protocol needs one (answers carrying the time, messages without a timestamp).
  decode(frame: Buffer, state: ConnectionState, now: Date): DecodedMessage;
  // Teltonika-style login answer (0x01 accept / 0x00 reject); protocols whose login ack is in DecodedMessage.ack omit it.
  loginReply?(accepted: boolean): Buffer;
  // What the server can send to this protocol's devices; absent when it sends nothing.
  commands?: CommandEncoder;
}

export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}
