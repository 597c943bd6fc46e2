import type { Device } from '../../../src/client/index.ts';
import { dateTime, t } from '../i18n.ts';
import { useLive } from '../live.ts';

/** The socket's latest events, announced politely to screen readers as they come. */
export function LiveEvents({ devices }: { devices: Device[] }) {
  const live = useLive();
  const names = new Map(devices.map((device) => [device.id, device.name]));
  return (
    <section aria-labelledby="live-events" className="live-events">
      <h2 id="live-events">{t.events.liveTitle}</h2>
      <ul aria-live="polite">
        {live.events.map((event) => (
          <li key={event.id}>
            <strong>{t.liveEvent(names.get(event.deviceId) ?? `#${event.deviceId}`, t.events.types[event.type] ?? event.type)}</strong>
            <small>{dateTime(event.eventTime)}</small>
          </li>
        ))}
      </ul>
    </section>
  );
}
