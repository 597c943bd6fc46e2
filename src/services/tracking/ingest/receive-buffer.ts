/**
 * A connection's bytes not yet taken as frames. Appending copies only the new chunk, into storage
 * that doubles when full, so a frame trickled in a byte at a time costs copying linear in its
 * length (concatenating the whole buffer on every read would be quadratic). A chunk arriving on
 * an empty buffer is used as it is, without a copy.
 *
 * Bytes once appended are never overwritten: views handed out (frames still being decoded) stay
 * valid after later appends and consumes.
 */
export class ReceiveBuffer {
  #storage: Buffer = Buffer.alloc(0);
  #start = 0;
  #end = 0;

  get length(): number {
    return this.#end - this.#start;
  }

  /** The bytes not yet consumed. */
  view(): Buffer {
    return this.#storage.subarray(this.#start, this.#end);
  }

  append(chunk: Buffer): void {
    if (this.length === 0) {
      this.#storage = chunk;
      this.#start = 0;
      this.#end = chunk.length;
      return;
    }
    if (this.#end + chunk.length > this.#storage.length) {
      const length = this.length;
      const grown = Buffer.allocUnsafe(2 * (length + chunk.length));
      this.#storage.copy(grown, 0, this.#start, this.#end);
      this.#storage = grown;
      this.#start = 0;
      this.#end = length;
    }
    chunk.copy(this.#storage, this.#end);
    this.#end += chunk.length;
  }

  consume(count: number): void {
    this.#start += Math.min(count, this.length);
  }
}
