/**
 * Device connections open per remote address, across every listener of the process. Generous by
 * default (a carrier's NAT gateway puts many trackers behind one address); it stops one host from
 * holding all the sockets and memory of the process.
 */
export class ConnectionsPerAddress {
  readonly #limit: number;
  readonly #open = new Map<string, number>();
  /** Addresses refused since they were last below the limit: only their first refusal is worth a log line. */
  readonly #refusing = new Set<string>();

  constructor(limit: number) {
    this.#limit = limit;
  }

  /**
   * Counts a new connection from `address`, or refuses it when the address is at the limit.
   * `firstRefusal` says whether this is the first refusal since the address was last below it.
   */
  open(address: string): { accepted: boolean; firstRefusal: boolean } {
    const count = this.#open.get(address) ?? 0;
    if (count >= this.#limit) {
      const firstRefusal = !this.#refusing.has(address);
      this.#refusing.add(address);
      return { accepted: false, firstRefusal };
    }
    this.#open.set(address, count + 1);
    return { accepted: true, firstRefusal: false };
  }

  /** A connection counted by open() has closed. */
  close(address: string): void {
    const count = (this.#open.get(address) ?? 0) - 1;
    if (count > 0) this.#open.set(address, count);
    else this.#open.delete(address);
    this.#refusing.delete(address);
  }

  /** Connections open from `address`. */
  count(address: string): number {
    return this.#open.get(address) ?? 0;
  }
}
