import { LoggedOutError } from './auth-client.ts';
import type { TrackstackClient } from './trackstack-client.ts';
import type { LiveMessage } from './tracking-types.ts';

export type LiveStatus = 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface LiveSocketOptions {
  onMessage: (message: LiveMessage) => void;
  onStatus?: (status: LiveStatus) => void;
  /** A WebSocket constructor (the global one by default). */
  WebSocket?: typeof WebSocket;
}

const MAX_BACKOFF_MS = 30_000;
/** The server's "going away" close (an instance draining): another instance answers, so come back at once, spread over this much. */
const GOING_AWAY = 1001;
const GOING_AWAY_SPREAD_MS = 300;

/**
 * The live socket (`/api/socket`) with reconnection. The browser sends its access_token cookie with
 * the upgrade. A socket that closes before it ever opened was most likely refused (an expired token):
 * before trying again, one API call runs the SDK's refresh rule, and a refresh the server refuses
 * ends the socket (the SDK reports logged-out). Backoff doubles to 30 s and resets once a socket opens.
 * A socket the server closes with 1001 (going away: it is draining) reconnects within GOING_AWAY_SPREAD_MS.
 */
export class LiveSocket {
  private socket: WebSocket | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private backoffMs = 1000;
  private stopped = false;
  private readonly client: TrackstackClient;
  private readonly options: LiveSocketOptions;

  constructor(client: TrackstackClient, options: LiveSocketOptions) {
    this.client = client;
    this.options = options;
    this.connect('connecting');
  }

  close(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.socket?.close();
    this.options.onStatus?.('closed');
  }

  private connect(status: LiveStatus): void {
    if (this.stopped) return;
    this.options.onStatus?.(status);
    const Socket = this.options.WebSocket ?? WebSocket;
    const socket = new Socket(this.client.socketUrl());
    this.socket = socket;
    let opened = false;
    socket.onopen = () => {
      opened = true;
      this.backoffMs = 1000;
      this.options.onStatus?.('open');
    };
    socket.onmessage = (message) => {
      if (typeof message.data !== 'string') return;
      try {
        this.options.onMessage(JSON.parse(message.data) as LiveMessage);
      } catch {
        // A frame that is not JSON is not ours to act on.
      }
    };
    socket.onclose = (event) => {
      if (this.stopped || this.socket !== socket) return;
      if (opened && event.code === GOING_AWAY) {
        this.timer = setTimeout(() => void this.reconnect(opened), Math.random() * GOING_AWAY_SPREAD_MS);
      } else {
        this.timer = setTimeout(() => void this.reconnect(opened), this.backoffMs);
        this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
      }
      this.options.onStatus?.('reconnecting');
    };
  }

  private async reconnect(wasOpen: boolean): Promise<void> {
    if (!wasOpen) {
      try {
        await this.client.profile();
      } catch (error) {
        if (error instanceof LoggedOutError) return this.close();
      }
    }
    this.connect('reconnecting');
  }
}
