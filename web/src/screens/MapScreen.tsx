import { useQuery } from '@tanstack/react-query';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import type { PointerEvent } from 'react';
import type { Device, Position } from '../../../src/client/index.ts';
import { api } from '../api.ts';
import type { LngLat } from '../map/geo.ts';
import { DevicePositions } from '../map/layers/DevicePositions.tsx';
import type { DevicePoint } from '../map/layers/DevicePositions.tsx';
import { FitToPoints, FollowPoint } from '../map/layers/FitToPoints.tsx';
import { MapPadding } from '../map/layers/MapPadding.tsx';
import { MapView } from '../map/MapView.tsx';
import { formatSpeed, useUnits } from '../format.ts';
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

/** How much of a phone's screen the device list covers (styles.css, below 720 px); a wide screen shows it beside the map whatever this says. */
const SHEET_STATES = ['peek', 'half', 'full'] as const;
type SheetState = (typeof SHEET_STATES)[number];
/** Pixels a finger moves the sheet's grip before the sheet takes the next state. */
const SWIPE_PX = 30;

export default function MapScreen() {
  const devices = useDevices();
  const latest = useQuery({ queryKey: queryKeys.latestPositions(), queryFn: () => api.latestPositions() });
  const live = useLive();
  const [search, setSearch] = useState('');
  const [selected, setSelected] = useState<number | undefined>();
  const [follow, setFollow] = useState(false);
  const [sheet, setSheet] = useState<SheetState>('half');
  const sheetCover = useSheetCover();
  /** A device chosen in the list: the camera goes to it once (the map would otherwise stay where it was). */
  const [centreOn, setCentreOn] = useState<LngLat | undefined>();

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
        return position ? [{ id: device.id, name: device.name, status: device.status, selected: device.id === selected, at: [position.longitude, position.latitude] as LngLat }] : [];
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

  /** On a phone the sheet steps down so the map shows the device and its card. */
  const chooseOnMap = (id: number) => {
    setSelected(id);
    setSheet('peek');
  };
  const chooseInList = (id: number) => {
    chooseOnMap(id);
    const position = positions.get(id);
    if (position) setCentreOn([position.longitude, position.latitude]);
  };

  const selectedDevice = devices.data.find((device) => device.id === selected);
  return (
    <div className="map-screen with-sheet">
      <aside ref={sheetCover.ref} className="panel sheet" data-sheet={sheet} aria-labelledby="devices-heading">
        <SheetGrip state={sheet} onChange={setSheet} />
        <div className="row spread">
          <h1 id="devices-heading">{t.map.devices}</h1>
          <span className={`live live-${live.status}`} role="status">
            {t.map.live[live.status]}
          </span>
        </div>
        {selectedDevice && (
          <SelectedDevice
            device={selectedDevice}
            position={positions.get(selectedDevice.id)}
            follow={follow}
            onFollow={(on) => {
              setFollow(on);
              // Following ends where the device is, not back at the device chosen earlier.
              setCentreOn(undefined);
            }}
            onClose={() => {
              setSelected(undefined);
              setFollow(false);
            }}
          />
        )}
        <div className="sheet-body">
          <label className="visually-hidden" htmlFor="device-search">
            {t.map.search}
          </label>
          <input id="device-search" type="search" placeholder={t.map.search} value={search} onChange={(e) => setSearch(e.target.value)} />
          {list.length === 0 && <p>{t.map.noMatch}</p>}
          <DeviceList devices={list} positions={positions} selected={selected} onSelect={chooseInList} label={t.map.devices} />
          <LiveEvents devices={devices.data} />
        </div>
      </aside>
      <MapView label={t.map.mapLabel}>
        <MapPadding bottom={sheetCover.height} />
        <DevicePositions points={points} onSelect={chooseOnMap} />
        <FitToPoints points={pointsAt} once padding={60} maxZoom={14} />
        <FollowPoint point={followed ? [followed.longitude, followed.latitude] : centreOn} />
      </MapView>
    </div>
  );
}

/** Where the device sheet lies over the map (below 720 px), up to most of it: the map keeps its markers above it. */
function useSheetCover(): { ref: (element: HTMLElement | null) => void; height: number } {
  const [element, ref] = useState<HTMLElement | null>(null);
  const [height, setHeight] = useState(0);
  useLayoutEffect(() => {
    if (!element) return;
    const phone = window.matchMedia('(max-width: 720px)');
    const measure = () => {
      const mapHeight = element.parentElement?.clientHeight ?? 0;
      setHeight(phone.matches ? Math.min(element.offsetHeight, Math.round(mapHeight * 0.6)) : 0);
    };
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    phone.addEventListener('change', measure);
    return () => {
      observer.disconnect();
      phone.removeEventListener('change', measure);
    };
  }, [element]);
  return { ref, height };
}

/**
 * The sheet's handle on a phone: buttons that show more or less of the list (named for screen readers
 * and reachable by keyboard), and a grip a finger can swipe up or down.
 */
function SheetGrip({ state, onChange }: { state: SheetState; onChange: (state: SheetState) => void }) {
  const index = SHEET_STATES.indexOf(state);
  const swipeFrom = useRef<number | undefined>(undefined);
  const step = (by: number) => onChange(SHEET_STATES[Math.max(0, Math.min(SHEET_STATES.length - 1, index + by))] as SheetState);
  const onPointerUp = (event: PointerEvent) => {
    const from = swipeFrom.current;
    swipeFrom.current = undefined;
    if (from === undefined) return;
    const moved = event.clientY - from;
    if (moved < -SWIPE_PX) step(1);
    else if (moved > SWIPE_PX) step(-1);
  };
  return (
    <div className="sheet-grip" onPointerDown={(event) => (swipeFrom.current = event.clientY)} onPointerUp={onPointerUp} onPointerCancel={() => (swipeFrom.current = undefined)}>
      <span className="grip-bar" aria-hidden="true" />
      <div className="row" role="group" aria-label={t.map.sheet.label(t.map.sheet.states[state] ?? state)}>
        <button type="button" className="sheet-step" aria-label={t.map.sheet.less} disabled={index === 0} onClick={() => step(-1)}>
          <span aria-hidden="true">▾</span>
        </button>
        <button type="button" className="sheet-step" aria-label={t.map.sheet.more} disabled={index === SHEET_STATES.length - 1} onClick={() => step(1)}>
          <span aria-hidden="true">▴</span>
        </button>
      </div>
    </div>
  );
}

/** The chosen device: its state, and where to go from here (history, commands, sharing). */
function SelectedDevice({ device, position, follow, onFollow, onClose }: {
  device: Device;
  position: Position | undefined;
  follow: boolean;
  onFollow: (follow: boolean) => void;
  onClose: () => void;
}) {
  const units = useUnits();
  return (
    <section className="card selected" aria-labelledby="selected-device">
      <div className="row spread">
        <h2 id="selected-device">{device.name}</h2>
        <button type="button" className="close" aria-label={t.map.closeCard(device.name)} onClick={onClose}>
          <span aria-hidden="true">×</span>
        </button>
      </div>
      <p>
        <StatusDot status={device.status} /> {t.status[device.status]} · {t.map.lastUpdate(relativeTime(device.lastUpdate))}
      </p>
      <p>{position ? t.map.fixAt(dateTime(position.fixTime), formatSpeed(position.speed, units.speed)) : t.map.noPosition}</p>
      <div className="row wrap actions">
        {position && (
          <label className="check">
            <input type="checkbox" checked={follow} onChange={(e) => onFollow(e.target.checked)} />
            {t.map.follow}
          </label>
        )}
        <Link to={`/devices/${device.id}`}>{t.map.details}</Link>
        {device.permissions.position && <Link to={`/devices/${device.id}/history`}>{t.device.history}</Link>}
        {device.permissions.commands && <Link to={`/devices/${device.id}#device-commands`}>{t.map.commands}</Link>}
        {device.isOwner && <Link to={`/devices/${device.id}#device-sharing`}>{t.map.share}</Link>}
      </div>
    </section>
  );
}
