// Commands as the protocols see them: the types by Traccar's names (DESIGN §5.7) and what a protocol's encoder does.

export const COMMAND_TYPES = [
  'custom',
  'positionSingle',
  'positionPeriodic',
  'positionStop',
  'engineStop',
  'engineResume',
  'alarmArm',
  'alarmDisarm',
  'setTimezone',
  'rebootDevice',
  'outputControl',
  'sosNumber',
] as const;
export type CommandType = (typeof COMMAND_TYPES)[number];

/** A command as an encoder receives it: its type and attributes already validated against the type. */
export interface DeviceCommand {
  type: CommandType;
  attributes: Readonly<Record<string, unknown>>;
}

/** What a protocol can send to its devices. Pure, like the decoders. */
export interface CommandEncoder {
  readonly supports: readonly CommandType[];
  /**
   * The frame for one command. `sequence` identifies the command where the protocol echoes an id back in the answer;
   * throws ProtocolError when the attributes cannot be expressed in the protocol.
   */
  encode(command: DeviceCommand, context: { uniqueId: string; sequence: number; now: Date }): Buffer;
}
