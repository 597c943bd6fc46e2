import { useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import type { FormEvent } from 'react';
import { EVENT_TYPES } from '../../../src/client/index.ts';
import type { EventQuery, EventType } from '../../../src/client/index.ts';
import { api } from '../api.ts';
import { dateTime, t } from '../i18n.ts';
import { ErrorNote, Field, Loading, localDateTimeInput, Page } from '../ui.tsx';
import { useDevices } from './MapScreen.tsx';
import { queryKeys } from '../queryKeys.ts';

const DAY_MS = 86_400_000;


/** Without an end, the range runs a little past now: a device's clock may be ahead of the server's. */
const CLOCK_SKEW_MS = 10 * 60_000;

function rangeQuery(from: string, to: string): EventQuery {
  return {
    ...(from ? { from: new Date(from).toISOString() } : {}),
    to: (to ? new Date(to) : new Date(Date.now() + CLOCK_SKEW_MS)).toISOString(),
  };
}

export default function Events() {
  const devices = useDevices();
  const geofences = useQuery({ queryKey: queryKeys.geofences, queryFn: () => api.geofences() });
  const [deviceId, setDeviceId] = useState('');
  const [type, setType] = useState('');
  const [from, setFrom] = useState(() => localDateTimeInput(new Date(Date.now() - DAY_MS)));
  const [to, setTo] = useState('');
  const [filters, setFilters] = useState<EventQuery>(() => rangeQuery(from, ''));
  const events = useQuery({ queryKey: queryKeys.events.list(filters), queryFn: () => api.events(filters) });
  const deviceSelect = useId();
  const typeSelect = useId();
  const names = new Map((devices.data ?? []).map((device) => [device.id, device.name]));
  const geofenceNames = new Map((geofences.data ?? []).map((geofence) => [geofence.id, geofence.name]));

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setFilters({
      ...(deviceId ? { deviceId: Number(deviceId) } : {}),
      ...(type ? { type: [type as EventType] } : {}),
      ...rangeQuery(from, to),
    });
  };

  return (
    <Page title={t.events.title} wide>
      <form onSubmit={submit} className="row wrap filters">
        <div className="field">
          <label htmlFor={deviceSelect}>{t.events.device}</label>
          <select id={deviceSelect} value={deviceId} onChange={(e) => setDeviceId(e.target.value)}>
            <option value="">{t.events.allDevices}</option>
            {devices.data?.map((device) => (
              <option key={device.id} value={device.id}>
                {device.name}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={typeSelect}>{t.events.type}</label>
          <select id={typeSelect} value={type} onChange={(e) => setType(e.target.value)}>
            <option value="">{t.events.allTypes}</option>
            {EVENT_TYPES.map((name) => (
              <option key={name} value={name}>
                {t.events.types[name]}
              </option>
            ))}
          </select>
        </div>
        <Field label={t.events.from} type="datetime-local" value={from} onChange={(e) => setFrom(e.target.value)} />
        <Field label={t.events.to} type="datetime-local" value={to} onChange={(e) => setTo(e.target.value)} />
        <button type="submit" className="primary">
          {t.history.show}
        </button>
      </form>
      {events.isPending && <Loading />}
      <ErrorNote error={events.error} onRetry={() => void events.refetch()} />
      {events.data?.length === 0 && <p className="note info">{t.events.empty}</p>}
      {events.data && events.data.length >= 1000 && <p className="note info">{t.events.max}</p>}
      {events.data && events.data.length > 0 && (
        <table className="table">
          <thead>
            <tr>
              <th scope="col">{t.events.time}</th>
              <th scope="col">{t.events.device}</th>
              <th scope="col">{t.events.type}</th>
            </tr>
          </thead>
          <tbody>
            {[...events.data].reverse().map((event) => (
              <tr key={event.id}>
                <td>{dateTime(event.eventTime)}</td>
                <td>{names.get(event.deviceId) ?? `#${event.deviceId}`}</td>
                <td>
                  {t.events.types[event.type] ?? event.type}
                  {event.geofenceId !== null && <small> · {t.events.inGeofence(geofenceNames.get(event.geofenceId) ?? `#${event.geofenceId}`)}</small>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  );
}
