// The device link: how ingestion offers a device's live connection to whoever sends it commands. Ingestion owns it;
// commands implement CommandChannel and use the links it is handed, never the reverse.
import type { TcpProtocol } from '../protocols/types.ts';

/** A device's live TCP connection on this instance, as the listener hands it over. */
export interface DeviceLink {
  protocol: TcpProtocol;
  uniqueId: string;
  /** Writes one frame; false when the connection is already gone. */
  write(frame: Buffer): boolean;
}

/** What a TCP listener tells the commands about its connections and the devices' answers. */
export interface CommandChannel {
  /** The device's connection is open and its login answered: queued commands may go out on it. */
  attach(deviceId: number, link: DeviceLink): void;
  detach(deviceId: number, link: DeviceLink): void;
  /** A device answered a command (`answerTo`: the sequence its answer echoes); answers the command it answers, now delivered. */
  answered(deviceId: number, answerTo: number | undefined): Promise<number | undefined>;
}
