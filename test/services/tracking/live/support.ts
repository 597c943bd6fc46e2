import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import cookie from '@fastify/cookie';
import { WebSocket } from 'ws';
import type { ClientOptions } from 'ws';
import { installAuthentication } from '../../../../src/gateway/authenticate.ts';
import { installRouteAccess } from '../../../../src/platform/http/access.ts';
import { createHttpApp } from '../../../../src/platform/http/app.ts';
import type { HttpApp } from '../../../../src/platform/http/app.ts';
import { installIdentity } from '../../../../src/platform/http/identity.ts';
import type { LiveOptions } from '../../../../src/services/tracking/live/hub.ts';
import { createTrackingModule } from '../../../../src/services/tracking/module.ts';
import { trackingRouteAccess } from '../../../../src/services/tracking/route-access.ts';
import { TEST_INTERNAL_TOKEN, instanceContext } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';

/** How long a test waits for a message or a close before failing; delivery is immediate, this only bounds a hang. */
const WAIT_MS = 5_000;

/** Any message of the socket; a keepalive has no key. */
export interface LiveMessage {
  positions?: { id: number; deviceId: number }[];
  events?: { id: number; deviceId: number; type: string }[];
  devices?: ({ id: number; status: string } & Record<string, unknown>)[];
  commands?: { id: number; deviceId: number; status: string; type: string; sentAt: string | null }[];
}

export interface Closed {
  code: number;
  reason: string;
}

/** A real WebSocket client that queues what it receives, so a test can take messages in order. */
export class LiveClient {
  readonly socket: WebSocket;
  private readonly messages: unknown[] = [];
  private readonly waiting: ((message: unknown) => void)[] = [];
  readonly closed: Promise<Closed>;

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.on('message', (data) => {
      const message: unknown = JSON.parse(data.toString());
      const waiter = this.waiting.shift();
      if (waiter) waiter(message);
      else this.messages.push(message);
    });
    this.closed = new Promise((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  /** Opens a socket and waits until the upgrade succeeded. */
  static async open(url: string, options: ClientOptions = {}): Promise<LiveClient> {
    const socket = new WebSocket(url, options);
    const client = new LiveClient(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return client;
  }

  /** The next message, parsed. */
  next(): Promise<unknown> {
    const queued = this.messages.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no message arrived')), WAIT_MS);
      this.waiting.push((message) => {
        clearTimeout(timer);
        resolve(message);
      });
    });
  }

  /** Messages as they come until one satisfies `matches`: those before it, and it. */
  async until(matches: (message: LiveMessage) => boolean): Promise<{ before: LiveMessage[]; match: LiveMessage }> {
    const before: LiveMessage[] = [];
    for (;;) {
      const message = (await this.next()) as LiveMessage;
      if (matches(message)) return { before, match: message };
      before.push(message);
    }
  }

  /** The next message of this kind; other kinds (keepalives, devices after a store) are passed over. */
  async nextOf<K extends keyof LiveMessage>(kind: K): Promise<NonNullable<LiveMessage[K]>> {
    const { match } = await this.until((message) => message[kind] !== undefined);
    return match[kind] as NonNullable<LiveMessage[K]>;
  }

  /** Whether a message is waiting to be taken. */
  get hasMessage(): boolean {
    return this.messages.length > 0;
  }

  async waitClosed(): Promise<Closed> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('the socket was not closed')), WAIT_MS)));
    try {
      return await Promise.race([this.closed, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    this.socket.close();
  }
}

export interface Refusal {
  status: number;
  body: { code?: string; message?: string };
}

/** Attempts an upgrade that the server is expected to refuse, and answers its HTTP status and body. */
export function refusal(url: string, options: ClientOptions = {}): Promise<Refusal> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, options);
    socket.once('open', () => {
      socket.close();
      reject(new Error('the upgrade was accepted'));
    });
    // With this listener ws leaves the request to the caller, which ends it once the answer is read.
    socket.once('unexpected-response', (request, response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => {
        request.destroy();
        resolve({ status: response.statusCode ?? 0, body: text ? JSON.parse(text) : {} });
      });
    });
    socket.once('error', () => undefined);
  });
}

/**
 * Sends an upgrade request on a bare TCP connection and answers the status line the server wrote
 * and whether the server then ended the connection (a refused upgrade must not hold it open).
 */
export async function bareUpgrade(url: string, headers: Record<string, string> = {}): Promise<{ statusLine: string; endedByServer: boolean }> {
  const target = new URL(url);
  const socket = connect(Number(target.port), target.hostname);
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  const ended = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), WAIT_MS);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
  const lines = [
    `GET ${target.pathname}${target.search} HTTP/1.1`,
    `Host: ${target.host}`,
    'Connection: Upgrade',
    'Upgrade: websocket',
    'Sec-WebSocket-Version: 13',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  socket.write(lines.join('\r\n') + '\r\n\r\n');
  const endedByServer = await ended;
  socket.destroy();
  return { statusLine: received.split('\r\n')[0] ?? '', endedByServer };
}

/** Listens on a free local port and answers the socket's URL. */
export async function socketUrl(app: HttpApp): Promise<string> {
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' });
  return `ws://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/socket`;
}

export function bearer(login: TestLogin): ClientOptions {
  return { headers: login.authorization };
}

/**
 * A second tracking module on the test server's database and bus, with its own live options,
 * behind a gateway of its own: another instance in miniature, whose keepalive, bounds and
 * refresh interval a test can shorten.
 */
export async function tunedInstance(
  server: TestServer,
  live: Partial<LiveOptions>,
  /** Where the instance logs, at debug; silent without. */
  logStream?: NodeJS.WritableStream,
): Promise<{ url: string; close(): Promise<void> }> {
  const { database, auth, devices } = server;
  assert.ok(database && auth && devices);
  const ctx = instanceContext(server);
  const tracking = await createTrackingModule(ctx, { devices: devices.api, users: auth.api.users, live });
  const app = createHttpApp({ logLevel: logStream ? 'debug' : 'silent', bodyLimit: server.config.bodyLimit, trustProxy: undefined, logStream });
  installRouteAccess(app, [trackingRouteAccess]);
  await app.register(cookie);
  installAuthentication(app, auth.api.verifier, TEST_INTERNAL_TOKEN, auth.api.users, [server.config.publicUrl, server.config.webUrl]);
  installIdentity(app, TEST_INTERNAL_TOKEN);
  await tracking.registerRoutes(app);
  return { url: await socketUrl(app), close: () => app.close() };
}

