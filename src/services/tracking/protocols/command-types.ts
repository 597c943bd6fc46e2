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
   * What the protocol accepts: throws ProtocolError when it cannot carry the command (its type, its attributes). Checked
   * when a send is accepted, so a command the device could never be sent is refused before it is stored.
   */
  check(command: DeviceCommand): void;
  /**
   * The frame for one command, built once, when it is written to the device: the check first, then the bytes. `sequence`
   * identifies the command where the protocol echoes an id back in the answer; throws ProtocolError when the command or
   * the device's id cannot be expressed in the protocol.
   */
  encode(command: DeviceCommand, context: EncodeContext): Buffer;
}

export interface EncodeContext {
  uniqueId: string;
  sequence: number;
  now: Date;
}

/**
 * An encoder made of its two steps: `instruction` checks the command against the protocol and answers what its frame
 * carries (text, parts, a payload); `frame` writes that for one device. `check` is the first step alone.
 */
export function commandEncoder<Instruction>(
  supports: readonly CommandType[],
  instruction: (command: DeviceCommand) => Instruction,
  frame: (instruction: Instruction, context: EncodeContext, command: DeviceCommand) => Buffer,
): CommandEncoder {
  return {
    supports,
    check: (command) => void instruction(command),
    encode: (command, context) => frame(instruction(command), context, command),
  };
}
