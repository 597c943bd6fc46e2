import type { DecodedMessage } from '../protocols/types.ts';

/** A device as ingestion knows it once its uniqueId is accepted. */
export interface IngestDevice {
  id: number;
  uniqueId: string;
}

/** Where the protocol servers hand decoded messages; the pipeline implements it. */
export interface IngestSink {
  /** The device with this uniqueId when it may send (known and not disabled), else undefined. */
  identify(uniqueId: string): Promise<IngestDevice | undefined>;
  /** Stores what the message carries; resolves only once it is durable, so the caller may acknowledge it. */
  accept(device: IngestDevice, protocol: string, message: DecodedMessage, receivedAt: Date): Promise<Accepted>;
  /** A device's TCP session opened or ended (status online/offline). */
  connected(device: IngestDevice): void;
  disconnected(device: IngestDevice): void;
}

/** What became of an accepted message beyond its rows. */
export interface Accepted {
  /**
   * Its status reports that were not stored: the device had no fix yet to place them at. The event
   * engine still read them (an alarm or a command result raises its event, without a position).
   */
  withoutFix: number;
}

/** accept() for a device that was deleted, disabled or expired since it identified itself. */
export class DeviceRefusedError extends Error {
  constructor(uniqueId: string) {
    super(`device ${uniqueId} is no longer accepted`);
    this.name = 'DeviceRefusedError';
  }
}
