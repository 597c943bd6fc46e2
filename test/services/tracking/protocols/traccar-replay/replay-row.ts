/** A fix as the replay compares it: fix time (ISO, UTC), validity, latitude, longitude (to 1e-5 degrees). */
export type ReplayFix = readonly [time: string, valid: boolean, latitude: number, longitude: number];

/** One frame of a Traccar decoder test and what our decoder must make of it. */
export interface ReplayRow {
  /** Line of the frame in Traccar's *ProtocolDecoderTest.java. */
  line: number;
  /** What Traccar's test asserts: a position with a location, another report (attributes), or nothing. */
  traccar: 'location' | 'report' | 'nothing';
  /** The frame as bytes (hex) or as text. */
  hex?: string;
  text?: string;
  /** The device model Traccar's test set for this frame; our decoders do not know models. */
  model?: string;
  /** Frames of the commands feature: GT06 0x15/0x21 answers, Teltonika codec 12/13 packets. */
  owner?: 'commands';
  /** For those: the `result` text that answers a command, or null when the frame answers none. */
  answer?: string | null;
  /** The positions and the number of attribute-only reports, or 'refused' (ProtocolError). */
  expect: { positions: readonly ReplayFix[]; statuses: number } | 'refused';
}
