import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import type { FormEvent } from 'react';
import type { Device, DevicePermissions } from '../../../src/client/index.ts';
import { api } from '../api.ts';
import { formatNumber, formatSpeed, useUnits } from '../format.ts';
import { dateTime, relativeTime, t } from '../i18n.ts';
import { useLive } from '../live.ts';
import { Link, navigate } from '../router.tsx';
import { ErrorNote, Field, Loading, Note, Page, StatusDot } from '../ui.tsx';
import { DeviceCommands } from './DeviceCommands.tsx';
import { queryKeys } from '../queryKeys.ts';

const PERMISSIONS: (keyof DevicePermissions)[] = ['position', 'events', 'geofences', 'notifications', 'commands'];

export default function DevicePage({ params }: { params: Record<string, string> }) {
  const id = Number(params.id);
  const device = useQuery({ queryKey: queryKeys.device(id), queryFn: () => api.device(id) });
  if (device.isPending) return <Page title={t.device.details}><Loading /></Page>;
  if (device.isError) {
    return (
      <Page title={t.device.details}>
        <ErrorNote error={device.error} onRetry={() => void device.refetch()} />
        <Link to="/">{t.device.backToMap}</Link>
      </Page>
    );
  }
  return <DeviceSections device={device.data} />;
}

/** The device's sections; an address naming one (`#device-commands`, `#device-sharing`, from the map's card) scrolls to it and focuses its heading. */
function DeviceSections({ device: value }: { device: Device }) {
  const id = value.id;
  useEffect(() => {
    const target = window.location.hash ? document.getElementById(window.location.hash.slice(1)) : null;
    if (!target) return;
    target.tabIndex = -1;
    target.focus({ preventScroll: true });
    target.scrollIntoView({ block: 'start' });
  }, []);
  return (
    <Page title={value.name} wide>
      <p className="row">
        <Link to="/">{t.device.backToMap}</Link>
        {value.permissions.position && <Link to={`/devices/${id}/history`}>{t.device.history}</Link>}
      </p>
      <div className="grid">
        <Details device={value} />
        {value.permissions.position && <LatestPosition device={value} />}
        {value.permissions.events && <DeviceEvents deviceId={id} />}
        {value.permissions.commands && <DeviceCommands deviceId={id} />}
        <Attributes device={value} />
        {value.isOwner && <Sharing deviceId={id} />}
        {value.isOwner && <DeleteDevice deviceId={id} />}
      </div>
    </Page>
  );
}

function useDeviceUpdate(id: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (changes: Parameters<typeof api.updateDevice>[1]) => api.updateDevice(id, changes),
    onSuccess: (device) => {
      queryClient.setQueryData(queryKeys.device(id), device);
      void queryClient.invalidateQueries({ queryKey: queryKeys.devices });
    },
  });
}

function Details({ device }: { device: Device }) {
  const [editing, setEditing] = useState(false);
  const [form, setForm] = useState({ name: device.name, phone: device.phone ?? '', model: device.model ?? '', contact: device.contact ?? '', category: device.category ?? '' });
  const update = useDeviceUpdate(device.id);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    // A blank optional field clears it: the API takes null there, never an empty string.
    const blankToNull = (value: string) => value.trim() || null;
    const changes = { name: form.name.trim(), phone: blankToNull(form.phone), model: blankToNull(form.model), contact: blankToNull(form.contact), category: blankToNull(form.category) };
    update.mutate(changes, { onSuccess: () => setEditing(false) });
  };
  const field = (key: keyof typeof form, label: string) => (
    <Field label={label} value={form[key]} maxLength={128} required={key === 'name'} onChange={(e) => setForm({ ...form, [key]: e.target.value })} />
  );
  return (
    <section className="card" aria-labelledby="device-details">
      <h2 id="device-details">{t.device.details}</h2>
      {editing ? (
        <form onSubmit={submit} className="stack">
          {field('name', t.device.name)}
          {field('model', t.device.model)}
          {field('phone', t.device.phone)}
          {field('contact', t.device.contact)}
          {field('category', t.device.category)}
          <ErrorNote error={update.error} />
          <div className="row">
            <button type="submit" className="primary" disabled={update.isPending}>
              {t.save}
            </button>
            <button type="button" onClick={() => setEditing(false)}>
              {t.cancel}
            </button>
          </div>
        </form>
      ) : (
        <>
          <dl className="facts">
            <dt>{t.device.status}</dt>
            <dd>
              <StatusDot status={device.status} /> {t.status[device.status]} · {relativeTime(device.lastUpdate)}
            </dd>
            <dt>{t.device.uniqueId}</dt>
            <dd>{device.uniqueId}</dd>
            <dt>{t.device.model}</dt>
            <dd>{device.model ?? t.none}</dd>
            <dt>{t.device.phone}</dt>
            <dd>{device.phone ?? t.none}</dd>
            <dt>{t.device.contact}</dt>
            <dd>{device.contact ?? t.none}</dd>
            <dt>{t.device.category}</dt>
            <dd>{device.category ?? t.none}</dd>
            <dt>{t.device.owner}</dt>
            <dd>{device.isOwner ? t.device.you : t.device.sharedWithYou}</dd>
            {device.claimToken && (
              <>
                <dt>{t.device.claimToken}</dt>
                <dd>{device.claimToken}</dd>
              </>
            )}
          </dl>
          {device.isOwner && (
            <button type="button" onClick={() => setEditing(true)}>
              {t.device.edit}
            </button>
          )}
        </>
      )}
    </section>
  );
}

function LatestPosition({ device }: { device: Device }) {
  const live = useLive();
  const latest = useQuery({ queryKey: queryKeys.latestPositions(device.id), queryFn: () => api.latestPositions(device.id) });
  const position = live.positions.get(device.id) ?? latest.data?.[0];
  const units = useUnits();
  return (
    <section className="card" aria-labelledby="device-latest">
      <h2 id="device-latest">{t.device.latest}</h2>
      {latest.isPending && !position && <Loading />}
      <ErrorNote error={latest.error} />
      {!position && latest.isSuccess && <p>{t.device.noPosition}</p>}
      {position && (
        <dl className="facts">
          <dt>{t.device.time}</dt>
          <dd>{dateTime(position.fixTime)}</dd>
          <dt>{t.device.coordinates}</dt>
          <dd>
            {formatNumber(position.latitude, 5)}, {formatNumber(position.longitude, 5)}
          </dd>
          <dt>{t.device.speed}</dt>
          <dd>{formatSpeed(position.speed, units.speed)}</dd>
          {position.address && (
            <>
              <dt>{t.device.address}</dt>
              <dd>{position.address}</dd>
            </>
          )}
        </dl>
      )}
    </section>
  );
}

function DeviceEvents({ deviceId }: { deviceId: number }) {
  const events = useQuery({ queryKey: queryKeys.events.ofDevice(deviceId), queryFn: () => api.events({ deviceId }) });
  return (
    <section className="card" aria-labelledby="device-events">
      <h2 id="device-events">{t.device.events}</h2>
      {events.isPending && <Loading />}
      <ErrorNote error={events.error} onRetry={() => void events.refetch()} />
      {events.data?.length === 0 && <p>{t.device.noEvents}</p>}
      <ul className="plain">
        {events.data
          ?.slice(-20)
          .reverse()
          .map((event) => (
            <li key={event.id}>
              {t.events.types[event.type] ?? event.type} · <small>{dateTime(event.eventTime)}</small>
            </li>
          ))}
      </ul>
    </section>
  );
}

function Attributes({ device }: { device: Device }) {
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const update = useDeviceUpdate(device.id);
  const entries = Object.entries(device.attributes);
  const save = (attributes: Record<string, unknown>) => update.mutate({ attributes });
  const add = (event: FormEvent) => {
    event.preventDefault();
    const parsed = value.trim() === '' ? '' : Number.isFinite(Number(value)) ? Number(value) : value === 'true' ? true : value === 'false' ? false : value;
    save({ ...device.attributes, [key.trim()]: parsed });
    setKey('');
    setValue('');
  };
  return (
    <section className="card" aria-labelledby="device-attributes">
      <h2 id="device-attributes">{t.device.attributes}</h2>
      {entries.length === 0 && <p>{t.device.noAttributes}</p>}
      <dl className="facts">
        {entries.map(([name, content]) => (
          <div key={name} className="fact-row">
            <dt>{name}</dt>
            <dd>
              {typeof content === 'object' ? JSON.stringify(content) : String(content)}
              {device.isOwner && (
                <button
                  type="button"
                  className="link"
                  aria-label={`${t.delete} ${name}`}
                  onClick={() => save(Object.fromEntries(entries.filter(([other]) => other !== name)))}
                >
                  {t.delete}
                </button>
              )}
            </dd>
          </div>
        ))}
      </dl>
      {device.isOwner && (
        <form onSubmit={add} className="row wrap">
          <Field label={t.device.attributeKey} required maxLength={128} value={key} onChange={(e) => setKey(e.target.value)} />
          <Field label={t.device.attributeValue} value={value} onChange={(e) => setValue(e.target.value)} />
          <button type="submit" disabled={update.isPending}>
            {t.device.addAttribute}
          </button>
        </form>
      )}
      <ErrorNote error={update.error} />
    </section>
  );
}

function Sharing({ deviceId }: { deviceId: number }) {
  const queryClient = useQueryClient();
  const shares = useQuery({ queryKey: queryKeys.shares(deviceId), queryFn: () => api.shares(deviceId) });
  const [email, setEmail] = useState('');
  const [permissions, setPermissions] = useState<Record<keyof DevicePermissions, boolean>>({ position: true, events: true, geofences: false, notifications: false, commands: false });
  const refresh = () => void queryClient.invalidateQueries({ queryKey: queryKeys.shares(deviceId) });
  const share = useMutation({ mutationFn: () => api.shareDevice(deviceId, email.trim(), permissions), onSuccess: () => { setEmail(''); refresh(); } });
  const unshare = useMutation({ mutationFn: (who: { userId: number } | { email: string }) => api.unshareDevice(deviceId, who), onSuccess: refresh });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    share.mutate();
  };
  return (
    <section className="card" aria-labelledby="device-sharing">
      <h2 id="device-sharing">{t.device.sharing}</h2>
      {shares.isPending && <Loading />}
      <ErrorNote error={shares.error} onRetry={() => void shares.refetch()} />
      {shares.data?.length === 0 && <p>{t.device.noShares}</p>}
      <ul className="plain">
        {shares.data?.map((item) => (
          <li key={item.email}>
            <strong>{item.name ?? item.email}</strong> {item.userId === null && <small>({t.device.pending})</small>}
            <small> · {PERMISSIONS.filter((name) => item.permissions[name]).map((name) => t.device.permissions[name]).join(', ')}</small>{' '}
            <button type="button" className="link" onClick={() => unshare.mutate(item.userId === null ? { email: item.email } : { userId: item.userId })}>
              {t.device.stopSharing}
            </button>
          </li>
        ))}
      </ul>
      <form onSubmit={submit} className="stack">
        <Field label={t.device.shareWith} type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
        <fieldset className="row wrap">
          <legend>{t.device.permissionsLegend}</legend>
          {PERMISSIONS.map((name) => (
            <label key={name} className="check">
              <input type="checkbox" checked={permissions[name]} onChange={(e) => setPermissions({ ...permissions, [name]: e.target.checked })} />
              {t.device.permissions[name]}
            </label>
          ))}
        </fieldset>
        <ErrorNote error={share.error ?? unshare.error} />
        <button type="submit" disabled={share.isPending}>
          {t.device.share}
        </button>
      </form>
    </section>
  );
}

function DeleteDevice({ deviceId }: { deviceId: number }) {
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: () => api.deleteDevice(deviceId),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.devices });
      navigate('/');
    },
  });
  return (
    <section className="card danger" aria-labelledby="device-delete">
      <h2 id="device-delete">{t.device.deleteDevice}</h2>
      <ErrorNote error={remove.error} />
      {remove.isIdle || remove.isError ? (
        <button type="button" className="danger" onClick={() => window.confirm(t.device.confirmDelete) && remove.mutate()}>
          {t.device.deleteDevice}
        </button>
      ) : (
        <Note>{t.loading}</Note>
      )}
    </section>
  );
}
