import assert from 'node:assert/strict';
import net from 'node:net';
import type { DeviceFix } from '../../../../src/services/tracking/protocols/simulated-tracker.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';

/** A tracker's side of a TCP connection: writes bytes, reads what the server answers, sees it close. */
export class DeviceConnection {
  readonly socket: net.Socket;
  readonly closed: Promise<void>;
  #received: Buffer = Buffer.alloc(0);
  #waiters: (() => void)[] = [];

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#received = Buffer.concat([this.#received, chunk]);
      for (const wake of this.#waiters.splice(0)) wake();
    });
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.on('close', () => {
      for (const wake of this.#waiters.splice(0)) wake();
      resolve();
    }));
  }

  static async open(port: number): Promise<DeviceConnection> {
    const socket = net.connect({ port, host: '127.0.0.1' });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new DeviceConnection(socket);
  }

  write(bytes: Buffer | string): void {
    this.socket.write(bytes);
  }

  /** Writes the bytes in pieces of `size`, a few milliseconds apart, as a slow link delivers them. */
  async trickle(bytes: Buffer, size: number): Promise<void> {
    for (let offset = 0; offset < bytes.length; offset += size) {
      this.socket.write(bytes.subarray(offset, offset + size));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }

  /** Waits until `ready` holds for the bytes received; fails after `timeoutMs` or when the connection closes first. */
  async #waitUntil(ready: (received: Buffer) => boolean, what: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!ready(this.#received)) {
      if (this.socket.destroyed) assert.fail(`the connection closed before ${what} (got ${this.#received.toString('hex')})`);
      const left = deadline - Date.now();
      if (left <= 0) assert.fail(`timed out waiting for ${what} (got ${this.#received.toString('hex')})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The next `length` bytes the server sends. */
  async read(length: number, timeoutMs = 5000): Promise<Buffer> {
    await this.#waitUntil((received) => received.length >= length, `${length} bytes`, timeoutMs);
    const answer = this.#received.subarray(0, length);
    this.#received = this.#received.subarray(length);
    return answer;
  }

  /** Text up to and including `end`. */
  async readText(end: string, timeoutMs = 5000): Promise<string> {
    await this.#waitUntil((received) => received.includes(end), `'${end}'`, timeoutMs);
    return (await this.read(this.#received.indexOf(end) + end.length)).toString('latin1');
  }

  /** Resolves when the server has closed the connection (fails after `timeoutMs`). */
  async assertClosed(timeoutMs = 5000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the server did not close the connection')), timeoutMs);
    });
    try {
      await Promise.race([this.closed, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Bytes received and not read yet. */
  get unread(): Buffer {
    return this.#received;
  }

  close(): Promise<void> {
    this.socket.end();
    return this.closed;
  }
}

export async function registerDevice(server: TestServer, owner: TestLogin, uniqueId: string, attributes: Record<string, unknown> = {}): Promise<number> {
  const response = await server.app.inject({
    method: 'POST',
    url: '/api/devices/',
    headers: owner.authorization,
    payload: { name: `Tracker ${uniqueId}`, uniqueId, attributes },
  });
  assert.equal(response.statusCode, 201, response.body);
  return response.json().id as number;
}

export async function waitFor<T>(read: () => Promise<T>, accept: (value: T) => boolean, what: string, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export const T0 = Date.parse('2025-03-01T08:00:00.000Z');

/** A fix `seconds` after T0, moving east along a parallel at `speed` knots unless told otherwise. */
export function fixAt(seconds: number, overrides: Partial<DeviceFix> = {}): DeviceFix {
  return {
    time: new Date(T0 + seconds * 1000),
    latitude: 52.5,
    longitude: 13.4 + seconds * 0.0001,
    altitude: 40,
    speed: 10,
    course: 90,
    valid: true,
    ...overrides,
  };
}

export interface PositionJson {
  id: number;
  deviceId: number;
  protocol: string;
  fixTime: string;
  deviceTime: string | null;
  serverTime: string;
  valid: boolean;
  latitude: number;
  longitude: number;
  altitude: number;
  speed: number;
  course: number;
  attributes: Record<string, unknown>;
}

export interface EventJson {
  id: number;
  type: string;
  eventTime: string;
  deviceId: number;
  positionId: number | null;
  geofenceId: number | null;
  attributes: Record<string, unknown>;
}

export async function positionsOf(server: TestServer, user: TestLogin, deviceId: number, from = T0 - 86_400_000, to = T0 + 86_400_000): Promise<PositionJson[]> {
  const response = await server.app.inject({
    url: `/api/positions/?deviceId=${deviceId}&from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`,
    headers: user.authorization,
  });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as PositionJson[];
}

export async function latestOf(server: TestServer, user: TestLogin, deviceId: number): Promise<PositionJson | undefined> {
  const response = await server.app.inject({ url: `/api/positions/?deviceId=${deviceId}`, headers: user.authorization });
  assert.equal(response.statusCode, 200, response.body);
  return (response.json() as PositionJson[])[0];
}

export async function eventsOf(server: TestServer, user: TestLogin, deviceId: number, from = 0, to = Date.now() + 86_400_000): Promise<EventJson[]> {
  const response = await server.app.inject({
    url: `/api/events/?deviceId=${deviceId}&from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`,
    headers: user.authorization,
  });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as EventJson[];
}

export async function deviceOf(server: TestServer, user: TestLogin, deviceId: number): Promise<{ status: string; lastUpdate: string | null; positionId: number | null }> {
  const response = await server.app.inject({ url: `/api/devices/${deviceId}`, headers: user.authorization });
  assert.equal(response.statusCode, 200, response.body);
  return response.json();
}
