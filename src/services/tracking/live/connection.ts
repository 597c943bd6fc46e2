import type { WebSocket } from 'ws';
import type { Identity } from '../../../platform/http/identity.ts';
import { CLOSE_CODES } from './protocol.ts';

/** One open socket and what it still waits for. */
export class LiveConnection {
  readonly socket: WebSocket;
  readonly identity: Identity;
  private readonly maxBufferedBytes: number;
  /** Messages that arrived while the initial positions were being read; undefined once those were sent. */
  private pending: Buffer[] | undefined = [];
  private pendingBytes = 0;
  /** Whether the socket answered the last ping. */
  alive = true;
  closed = false;
  /** Cancels the close at the token's expiry. */
  cancelExpiry: (() => void) | undefined;

  constructor(socket: WebSocket, identity: Identity, maxBufferedBytes: number) {
    this.socket = socket;
    this.identity = identity;
    this.maxBufferedBytes = maxBufferedBytes;
  }

  send(data: Buffer): void {
    if (this.closed) return;
    if (this.pending) {
      this.pendingBytes += data.length;
      if (this.pendingBytes > this.maxBufferedBytes) this.close(CLOSE_CODES.slowConsumer, 'slow consumer');
      else this.pending.push(data);
      return;
    }
    if (this.socket.bufferedAmount + data.length > this.maxBufferedBytes) {
      this.close(CLOSE_CODES.slowConsumer, 'slow consumer');
      return;
    }
    this.socket.send(data, { binary: false });
  }

  /** Sends the initial message, then whatever arrived meanwhile, in order. */
  start(initial: Buffer): void {
    const pending = this.pending ?? [];
    this.pending = undefined;
    this.send(initial);
    for (const data of pending) this.send(data);
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.cancelExpiry?.();
    // A socket still opening or already closing cannot take a close frame; it ends by itself.
    if (this.socket.readyState === this.socket.OPEN) this.socket.close(code, reason);
  }
}
