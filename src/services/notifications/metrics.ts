import { Counter, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';

/** What delivery reports; a process without a registry (a module built by hand) reports nowhere. */
export interface DeliveryMetrics {
  outcome(channel: string, outcome: 'sent' | 'retry' | 'failed' | 'gone' | 'dropped' | 'postponed'): void;
  /** Seconds from the delivery's creation (the event's arrival, give or take the outbox) to its successful send. */
  latency(channel: string, seconds: number): void;
}

export const NO_DELIVERY_METRICS: DeliveryMetrics = { outcome: () => {}, latency: () => {} };

/** The deliveries' outcomes and latency; their queue's depth and age are the durable-work metrics (`trackstack_queue_*{queue="deliveries"}`). */
export function registerDeliveryMetrics(registry: Registry): DeliveryMetrics {
  const outcomes = new Counter({
    name: 'trackstack_notification_deliveries_total',
    help: 'Notification delivery attempts by channel and outcome (sent, retry, failed, gone, dropped, postponed)',
    labelNames: ['channel', 'outcome'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'trackstack_notification_delivery_seconds',
    help: 'Time from a delivery being queued to its successful send, by channel',
    labelNames: ['channel'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
    registers: [registry],
  });
  return {
    outcome: (channel, outcome) => outcomes.inc({ channel, outcome }),
    latency: (channel, seconds) => latency.observe({ channel }, seconds),
  };
}
