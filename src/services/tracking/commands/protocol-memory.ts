import type { IngestSink } from '../ingest/sink.ts';
import type { CommandRepository } from './repository.ts';

/**
 * The protocol each device speaks (what `types` and `send` go by): recorded by the sink in front of ingestion, once per
 * device and process unless it changes, before the device's first message is stored; read from memory where this
 * process has seen the device, else from the table.
 */
export class ProtocolMemory {
  readonly #repository: CommandRepository;
  readonly #now: () => number;
  readonly #known = new Map<number, string>();

  constructor(repository: CommandRepository, now: () => number = Date.now) {
    this.#repository = repository;
    this.#now = now;
  }

  async protocolOf(deviceId: number): Promise<string | undefined> {
    return this.#known.get(deviceId) ?? (await this.#repository.protocolOf(deviceId));
  }

  forget(deviceId: number): void {
    this.#known.delete(deviceId);
  }

  /** `sink` with every accepted message's protocol recorded first. */
  recording(sink: IngestSink): IngestSink {
    return {
      identify: (uniqueId) => sink.identify(uniqueId),
      connected: (device) => sink.connected(device),
      disconnected: (device) => sink.disconnected(device),
      accept: async (device, protocol, message, receivedAt) => {
        if (this.#known.get(device.id) !== protocol) {
          await this.#repository.setProtocol(device.id, protocol, this.#now());
          this.#known.set(device.id, protocol);
        }
        return sink.accept(device, protocol, message, receivedAt);
      },
    };
  }
}
