import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PushMessage, PushOutcome, PushSender, PushTarget } from '../../../src/services/notifications/push/push-sender.ts';
import type { TestServer } from '../../support/server.ts';

/**
 * A push provider standing in for one the other channels' work brings: it records what it is asked
 * to send and answers the outcomes it is told to.
 */
export class RecordingPushSender implements PushSender {
  readonly kind = 'fcm' as const;
  readonly sent: { target: PushTarget; message: PushMessage }[] = [];
  readonly outcomes: PushOutcome[] = [];

  async send(target: PushTarget, message: PushMessage): Promise<PushOutcome> {
    this.sent.push({ target, message });
    return this.outcomes.shift() ?? { kind: 'sent' };
  }
}

export interface ReceivedWebhook {
  deliveryId: string;
  /** Whether the signature matched the secret of the URL's rule, recomputed as a receiver would. */
  verified: boolean;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON bodies are asserted field by field
  body: any;
  /** The status this receiver answered. */
  status: number;
}

/**
 * A local webhook receiver: checks `Trackstack-Signature` the way a receiver is told to (HMAC-SHA256
 * over "<t>.<body>" with the rule's secret, constant-time comparison) and records every call.
 * `answers` sets the statuses of the next calls (200 once they run out); `hold` keeps calls open.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  readonly answers: number[] = [];
  secret = '';
  hold = false;
  /** How long each answer takes. */
  delayMs = 0;
  private readonly held: http.ServerResponse[] = [];
  private readonly server: http.Server;
  private port = 0;

  private constructor() {
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const signature = String(request.headers['trackstack-signature'] ?? '');
        const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(signature);
        const expected = match ? createHmac('sha256', this.secret).update(`${match[1]}.${raw}`).digest() : Buffer.alloc(0);
        const verified = match !== null && timingSafeEqual(expected, Buffer.from(match[2] as string, 'hex'));
        const deliveryId = String(request.headers['trackstack-delivery']);
        if (this.hold) {
          // Never answered: status 0.
          this.received.push({ deliveryId, verified, body: JSON.parse(raw), status: 0 });
          this.held.push(response);
          return;
        }
        const status = this.answers.shift() ?? 200;
        setTimeout(() => {
          this.received.push({ deliveryId, verified, body: JSON.parse(raw), status });
          response.writeHead(status, { 'content-type': 'application/json' }).end('{}');
        }, this.delayMs);
      });
    });
  }

  static async start(): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    receiver.port = (receiver.server.address() as AddressInfo).port;
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks/trackstack`;
  }

  deliveryIds(): string[] {
    return this.received.filter((call) => call.status >= 200 && call.status < 300).map((call) => call.deliveryId);
  }

  async close(): Promise<void> {
    for (const response of this.held.splice(0)) response.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** Stores events as ingestion does (the fact is recorded with them), then lets the outbox and the worker run. */
export async function raiseEvents(server: TestServer, events: { deviceId: number; type?: 'alarm' | 'geofenceEnter' | 'ignitionOn'; alarm?: string }[]): Promise<number[]> {
  const tracking = server.tracking;
  if (!tracking) throw new Error('tracking is not running');
  const ids = await tracking.api.storeEvents(
    events.map((event) => ({ type: event.type ?? 'alarm', eventTime: Date.now(), deviceId: event.deviceId, attributes: event.alarm ? { alarm: event.alarm } : {} })),
  );
  await deliverNow(server);
  return ids;
}

/** Runs the due facts and deliveries now. */
export async function deliverNow(server: TestServer): Promise<void> {
  await server.outbox?.drainNow();
  await server.notifications?.worker.drainNow();
}

export interface StoredDelivery {
  id: number;
  delivery_id: string;
  channel: string;
  state: string;
  attempts: number;
  available_at: number;
  last_error: string | null;
  collapsed_into: number | null;
}

export async function deliveries(server: TestServer): Promise<StoredDelivery[]> {
  const database = server.database;
  if (!database) throw new Error('no database');
  const rows = await database.db
    .selectFrom('notification_deliveries' as never)
    .select(['id', 'delivery_id', 'channel', 'state', 'attempts', 'available_at', 'last_error', 'collapsed_into'] as never[])
    .orderBy('id' as never)
    .execute();
  return (rows as unknown as StoredDelivery[]).map((row) => ({ ...row, id: Number(row.id), available_at: Number(row.available_at), collapsed_into: row.collapsed_into === null ? null : Number(row.collapsed_into) }));
}

export async function countRows(server: TestServer, table: 'notification_rules' | 'notification_targets' | 'notification_deliveries'): Promise<number> {
  const database = server.database;
  if (!database) throw new Error('no database');
  const row = await database.db.selectFrom(table as never).select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirst();
  return Number((row as { count: number } | undefined)?.count ?? 0);
}
