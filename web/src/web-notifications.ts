import type { QueryClient } from '@tanstack/react-query';
import type { Device, NotificationRule, TrackingEvent } from '../../src/client/index.ts';
import { api } from './api.ts';
import { t } from './i18n.ts';
import { navigate } from './router.tsx';
import { queryKeys } from './queryKeys.ts';

/** Rules change rarely; the notifications screen drops this cache on every change. */
const RULES_STALE_MS = 60_000;

function wants(rule: NotificationRule, event: TrackingEvent): boolean {
  if (rule.type !== event.type || !rule.channels.includes('web')) return false;
  if (!rule.always && !rule.deviceIds.includes(event.deviceId)) return false;
  const alarms = typeof rule.attributes.alarms === 'string' ? rule.attributes.alarms.split(',').map((name) => name.trim()) : undefined;
  const raised = typeof event.attributes.alarm === 'string' ? event.attributes.alarm.split(',') : [];
  return event.type !== 'alarm' || !alarms || raised.some((name) => alarms.includes(name));
}

/**
 * The `web` channel (docs/notifications.md): events from the live socket that a rule with `web` names
 * become browser notifications, once the person allowed them; a click opens the device.
 */
export async function notifyWebRules(queryClient: QueryClient, events: TrackingEvent[]): Promise<void> {
  if (!('Notification' in window) || Notification.permission !== 'granted') return;
  const rules = await queryClient.fetchQuery({ queryKey: queryKeys.notifications.rules, queryFn: () => api.notificationRules(), staleTime: RULES_STALE_MS });
  const names = new Map(queryClient.getQueryData<Device[]>(queryKeys.devices)?.map((device) => [device.id, device.name]));
  for (const event of events) {
    if (!rules.some((rule) => wants(rule, event))) continue;
    const what = event.type === 'alarm' && typeof event.attributes.alarm === 'string' ? t.notifications.alarmNamed(event.attributes.alarm) : (t.events.types[event.type] ?? event.type);
    const notification = new Notification(t.liveEvent(names.get(event.deviceId) ?? `#${event.deviceId}`, what), { tag: `event-${event.id}`, icon: '/favicon.svg' });
    notification.onclick = () => {
      window.focus();
      navigate(`/devices/${event.deviceId}`);
      notification.close();
    };
  }
}
