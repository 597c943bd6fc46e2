import type { CommandRepository } from './repository.ts';

/**
 * The protocol each device speaks (what `types` and `send` go by): recorded when a listener identifies the device, once
 * per device and process unless it changes, before any of its messages is stored; read from memory where this process
 * has seen the device, else from the table.
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

  /** The device identified itself over `protocol`: stored when it is news to this process. */
  async record(deviceId: number, protocol: string): Promise<void> {
    if (this.#known.get(deviceId) === protocol) return;
    await this.#repository.setProtocol(deviceId, protocol, this.#now());
    this.#known.set(deviceId, protocol);
  }
}
