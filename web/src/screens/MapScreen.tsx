import { useQuery } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { api } from '../api.ts';
import type { LngLat } from '../map/geo.ts';
import { DevicePositions } from '../map/layers/DevicePositions.tsx';
import type { DevicePoint } from '../map/layers/DevicePositions.tsx';
import { FitToPoints, FollowPoint } from '../map/layers/FitToPoints.tsx';
import { MapView } from '../map/MapView.tsx';
import { dateTime, relativeTime, t } from '../i18n.ts';
import { useLive } from '../live.ts';
import { Link } from '../router.tsx';
import { ErrorNote, Loading, Page, StatusDot } from '../ui.tsx';
import { DeviceList } from './DeviceList.tsx';
import { LiveEvents } from './LiveEvents.tsx';
import { queryKeys } from '../queryKeys.ts';

export function useDevices() {
  return useQuery({ queryKey: queryKeys.devices, queryFn: () => api.devices() });
}

export default function MapScreen() {
  const devices = useDevices();
  const latest = useQuery({ queryKey: queryKeys.latestPositions(), queryFn: () => api.latestPositions() });
  const live = useLive();
  const [search, setSearch] = useState('');
  const [selected, setSelected] = useState<number | undefined>();
  const [follow, setFollow] = useState(false);

  useEffect(() => {
    if (latest.data) live.seed(latest.data);
  }, [latest.data, live]);

  const list = useMemo(() => {
    const needle = search.trim().toLowerCase();
    const all = [...(devices.data ?? [])].sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
    return needle ? all.filter((device) => `${device.name} ${device.uniqueId}`.toLowerCase().includes(needle)) : all;
  }, [devices.data, search]);

  // Recomputed when the live store has news (at most once every flush), not on every render.
  const { positions } = live;
  const points = useMemo<DevicePoint[]>(
    () =>
      (devices.data ?? []).flatMap((device) => {
        const position = positions.get(device.id);
        return position ? [{ id: device.id, status: device.status, selected: device.id === selected, at: [position.longitude, position.latitude] as LngLat }] : [];
      }),
    [devices.data, positions, selected],
  );
  const pointsAt = useMemo(() => points.map((point) => point.at), [points]);

  const followed = follow && selected !== undefined ? positions.get(selected) : undefined;

  if (devices.isPending) return <Page title={t.map.title}><Loading /></Page>;
  if (devices.isError) return <Page title={t.map.title}><ErrorNote error={devices.error} onRetry={() => void devices.refetch()} /></Page>;
  if (devices.data.length === 0) {
    return (
      <Page title={t.map.title}>
        <section className="empty card">
          <h2>{t.map.emptyTitle}</h2>
          <p>{t.map.emptyBody}</p>
          <Link to="/claim" className="button primary">
            {t.map.emptyAction}
          </Link>
        </section>
      </Page>
    );
  }

  const selectedDevice = devices.data.find((device) => device.id === selected);
  return (
    <div className="map-screen">
      <aside className="panel">
        <div className="row spread">
          <h1>{t.map.devices}</h1>
          <span className={`live live-${live.status}`} role="status">
            {t.map.live[live.status]}
          </span>
        </div>
        <label className="visually-hidden" htmlFor="device-search">
          {t.map.search}
        </label>
        <input id="device-search" type="search" placeholder={t.map.search} value={search} onChange={(e) => setSearch(e.target.value)} />
        {list.length === 0 && <p>{t.map.noMatch}</p>}
        <DeviceList devices={list} positions={positions} selected={selected} onSelect={setSelected} label={t.map.devices} />
        {selectedDevice && (
          <section className="card selected" aria-label={selectedDevice.name}>
            <h2>{selectedDevice.name}</h2>
            <p>
              <StatusDot status={selectedDevice.status} /> {t.status[selectedDevice.status]} · {t.map.lastUpdate(relativeTime(selectedDevice.lastUpdate))}
            </p>
            {positions.get(selectedDevice.id) ? <p>{dateTime(positions.get(selectedDevice.id)?.fixTime ?? null)}</p> : <p>{t.map.noPosition}</p>}
            <div className="row">
              <label className="check">
                <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} />
                {t.map.follow}
              </label>
              <Link to={`/devices/${selectedDevice.id}`}>{t.map.details}</Link>
              <Link to={`/devices/${selectedDevice.id}/history`}>{t.device.history}</Link>
            </div>
          </section>
        )}
        <LiveEvents devices={devices.data} />
      </aside>
      <MapView label={t.map.mapLabel}>
        <DevicePositions points={points} onSelect={setSelected} />
        <FitToPoints points={pointsAt} once padding={60} maxZoom={14} />
        <FollowPoint point={followed && [followed.longitude, followed.latitude]} />
      </MapView>
    </div>
  );
}
