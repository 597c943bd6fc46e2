import type { UserAccess } from '../../auth/users/directory.ts';
import { ALL_PERMISSIONS, NO_PERMISSIONS } from '../../devices/access.ts';
import type { DeviceAccess } from '../../devices/access.ts';
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
  /** As the recipient may see it (`eventSeenBy`). */
  event: StoredEventFact;
  /** How many events this message stands for (repeats within the collapse window fold into one). */
  count: number;
  /** The push target, for the push channels. */
  target?: TargetRow;
}

/**
 * The event as its recipient may see it, by their share's flags on its device (spec §2.3;
 * docs/notifications.md, What a message tells): `notifications` tells of the event (id, type, time,
 * device); its attributes and maintenance need `events`, its position `position`, its geofence
 * `geofences`. Every channel renders from this, so a hidden field reaches no webhook, mail or push.
 */
export function eventSeenBy(access: DeviceAccess, event: StoredEventFact): StoredEventFact {
  const permissions = access.administrator ? ALL_PERMISSIONS : (access.grant(event.deviceId)?.permissions ?? NO_PERMISSIONS);
  const { position, geofence, ...fields } = event;
  return {
    ...fields,
    attributes: permissions.events ? fields.attributes : {},
    maintenanceId: permissions.events ? fields.maintenanceId : null,
    positionId: permissions.position ? fields.positionId : null,
    geofenceId: permissions.geofences ? fields.geofenceId : null,
    ...(position && permissions.position ? { position } : {}),
    ...(geofence && permissions.geofences ? { geofence } : {}),
  };
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
