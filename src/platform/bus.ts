import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';

/**
 * Domain events between modules. Each publishing module declares its topics by augmenting this
 * interface (`declare module '…/platform/bus.ts' { interface DomainEvents { … } }`).
 * Payloads must survive JSON, since they cross processes when Redis is configured.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface DomainEvents {}

export type Topic = keyof DomainEvents & string;
type Handler<T extends Topic> = (payload: DomainEvents[T]) => Promise<void> | void;

/**
 * Publishing awaits this process's handlers, then forwards the event to other processes through
 * Redis when configured, where the same handlers run. Handlers are therefore idempotent. Events on
 * the bus are hints (cache invalidation, live updates, revocations): at most once, so a failing
 * handler is logged and the others still run. Facts that must not be lost go through the outbox.
 */
export class EventBus {
  private readonly handlers = new Map<string, Handler<Topic>[]>();
  private readonly origin = randomUUID();
  private readonly log: FastifyBaseLogger;
  private publisher: Redis | undefined;
  private channel = '';

  constructor(log: FastifyBaseLogger) {
    this.log = log;
  }

  on<T extends Topic>(topic: T, handler: Handler<T>): void {
    const list = this.handlers.get(topic) ?? [];
    list.push(handler as Handler<Topic>);
    this.handlers.set(topic, list);
  }

  async publish<T extends Topic>(topic: T, payload: DomainEvents[T]): Promise<void> {
    await this.dispatch(topic, payload);
    if (this.publisher) await this.publisher.publish(this.channel, JSON.stringify({ origin: this.origin, topic, payload }));
  }

  /**
   * Joins the cross-process fan-out on `channel`: every process of one deployment uses the same
   * channel, and no other deployment may (their user and device ids would collide).
   * `subscriber` must be a connection of its own (Redis subscribe mode).
   */
  async connect(publisher: Redis, subscriber: Redis, channel: string): Promise<void> {
    subscriber.on('message', (_channel: string, message: string) => {
      let event: { origin: string; topic: Topic; payload: DomainEvents[Topic] };
      try {
        event = JSON.parse(message);
      } catch {
        return;
      }
      if (event.origin === this.origin) return;
      void this.dispatch(event.topic, event.payload);
    });
    await subscriber.subscribe(channel);
    this.publisher = publisher;
    this.channel = channel;
  }

  private async dispatch<T extends Topic>(topic: T, payload: DomainEvents[T]): Promise<void> {
    for (const handler of this.handlers.get(topic) ?? []) {
      try {
        await handler(payload);
      } catch (error) {
        this.log.error({ err: error, topic }, 'event handler failed');
      }
    }
  }
}
