import type { UserAccess } from '../../auth/users/directory.ts';
import type { StoredEventFact } from '../../tracking/domain-events.ts';
import type { PushOutcome } from '../push/push-sender.ts';
import type { TargetRow } from '../repository.ts';
import type { Channel } from '../schemas.ts';

/** One message on its way: everything a channel needs, read at delivery time. */
export interface Notification {
  /** Stable across retries: the receiver's idempotency key. */
  deliveryId: string;
  channel: Channel;
  rule: { id: number; attributes: Record<string, unknown>; webhookSecret: string | null };
  user: UserAccess;
  device: { id: number; name: string; uniqueId: string };
  /** Without its position when the recipient may not see positions of the device. */
  event: StoredEventFact;
  /** How many events this message stands for (repeats within the collapse window fold into one). */
  count: number;
  /** The push target, for the push channels. */
  target?: TargetRow;
}

/** What one attempt came to; the same outcomes as the push providers'. */
export type SendOutcome = PushOutcome;

export interface ChannelSender {
  send(notification: Notification, signal: AbortSignal): Promise<SendOutcome>;
}

/** 5xx, 408 and 429 are tried again (after Retry-After when given); any other 4xx is final. */
export function outcomeOfStatus(status: number, retryAfter?: string | string[]): SendOutcome {
  if (status >= 200 && status < 300) return { kind: 'sent' };
  const error = `HTTP ${status}`;
  if (status >= 500 || status === 408 || status === 429) {
    const retryAfterMs = retryAfterMsOf(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
    return retryAfterMs === undefined ? { kind: 'retry', error } : { kind: 'retry', error, retryAfterMs };
  }
  return { kind: 'final', error };
}

function retryAfterMsOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
