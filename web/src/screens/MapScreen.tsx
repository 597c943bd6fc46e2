import { useQuery } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState } from 'react';
import type { GeoJSONSource, Map as MapLibreMap, Marker } from 'maplibre-gl';
import type { DeviceStatus } from '../../../src/client/index.ts';
import { api } from '../api.ts';
import { featureCollection } from '../map/geo.ts';
import { MapView } from '../map/MapView.tsx';
import type { MapLibre } from '../map/MapView.tsx';
import { dateTime, relativeTime, t } from '../i18n.ts';
import { useLive } from '../live.ts';
import { Link } from '../router.tsx';
import { ErrorNote, Loading, Page, StatusDot } from '../ui.tsx';
import { DeviceList } from './DeviceList.tsx';
import { LiveEvents } from './LiveEvents.tsx';

export function useDevices() {
  return useQuery({ queryKey: ['devices'], queryFn: () => api.devices() });
}

export default function MapScreen() {
  const devices = useDevices();
  const latest = useQuery({ queryKey: ['positions', 'latest'], queryFn: () => api.latestPositions() });
  const live = useLive();
  const [search, setSearch] = useState('');
  const [selected, setSelected] = useState<number | undefined>();
  const [follow, setFollow] = useState(false);
  const [map, setMap] = useState<{ map: MapLibreMap; maplibre: MapLibre }>();
  const fitted = useRef(false);

  useEffect(() => {
    if (latest.data) live.seed(latest.data);
  }, [latest.data, live]);

  const list = useMemo(() => {
    const needle = search.trim().toLowerCase();
    const all = [...(devices.data ?? [])].sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
    return needle ? all.filter((device) => `${device.name} ${device.uniqueId}`.toLowerCase().includes(needle)) : all;
  }, [devices.data, search]);

  // Device markers: one GeoJSON source, clustered when close; updated at most once a frame (the live store batches).
  useEffect(() => {
    if (!map || !devices.data) return;
    const features = devices.data.flatMap((device) => {
      const position = live.positions.get(device.id);
      if (!position) return [];
      return [
        {
          type: 'Feature' as const,
          properties: { id: device.id, status: device.status, selected: device.id === selected },
          geometry: { type: 'Point' as const, coordinates: [position.longitude, position.latitude] },
        },
      ];
    });
    (map.map.getSource('devices') as GeoJSONSource | undefined)?.setData(featureCollection(features));
    if (!fitted.current && features.length > 0) {
      fitted.current = true;
      const bounds = new map.maplibre.LngLatBounds();
      for (const feature of features) bounds.extend(feature.geometry.coordinates as [number, number]);
      map.map.fitBounds(bounds, { padding: 60, maxZoom: 14, duration: 0 });
    }
  }, [map, devices.data, live.version, live.positions, selected]);

  const followed = follow && selected !== undefined ? live.positions.get(selected) : undefined;
  useEffect(() => {
    if (map && followed) map.map.easeTo({ center: [followed.longitude, followed.latitude], duration: 500 });
  }, [map, followed]);

  const onLoad = (loadedMap: MapLibreMap, maplibre: MapLibre) => {
    const color = statusColors();
    loadedMap.addSource('devices', { type: 'geojson', data: featureCollection([]), cluster: true, clusterRadius: 40, clusterMaxZoom: 15 });
    loadedMap.addLayer({
      id: 'clusters',
      type: 'circle',
      source: 'devices',
      filter: ['has', 'point_count'],
      paint: {
        'circle-color': '#1d6fd8',
        'circle-opacity': 0.85,
        'circle-stroke-color': '#ffffff',
        'circle-stroke-width': 2,
        'circle-radius': ['step', ['get', 'point_count'], 14, 10, 18, 100, 24, 1000, 30],
      },
    });
    loadedMap.addLayer({
      id: 'device-points',
      type: 'circle',
      source: 'devices',
      filter: ['!', ['has', 'point_count']],
      paint: {
        'circle-color': ['match', ['get', 'status'], 'online', color.online, 'unknown', color.unknown, color.offline],
        'circle-radius': ['case', ['get', 'selected'], 10, 7],
        'circle-stroke-color': ['case', ['get', 'selected'], '#111827', '#ffffff'],
        'circle-stroke-width': ['case', ['get', 'selected'], 3, 2],
      },
    });
    loadedMap.on('click', 'device-points', (event) => {
      const id = event.features?.[0]?.properties?.id;
      if (typeof id === 'number') setSelected(id);
    });
    loadedMap.on('click', 'clusters', (event) => {
      const feature = event.features?.[0];
      const clusterId = feature?.properties?.cluster_id;
      if (!feature || typeof clusterId !== 'number' || feature.geometry.type !== 'Point') return;
      const center = feature.geometry.coordinates as [number, number];
      void (loadedMap.getSource('devices') as GeoJSONSource).getClusterExpansionZoom(clusterId).then((zoom) => loadedMap.easeTo({ center, zoom }));
    });
    labelClusters(loadedMap, maplibre);
    for (const layer of ['device-points', 'clusters']) {
      loadedMap.on('mouseenter', layer, () => (loadedMap.getCanvas().style.cursor = 'pointer'));
      loadedMap.on('mouseleave', layer, () => (loadedMap.getCanvas().style.cursor = ''));
    }
    setMap({ map: loadedMap, maplibre });
  };

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
        <DeviceList devices={list} positions={live.positions} selected={selected} onSelect={setSelected} label={t.map.devices} />
        {selectedDevice && (
          <section className="card selected" aria-label={selectedDevice.name}>
            <h2>{selectedDevice.name}</h2>
            <p>
              <StatusDot status={selectedDevice.status} /> {t.status[selectedDevice.status]} · {t.map.lastUpdate(relativeTime(selectedDevice.lastUpdate))}
            </p>
            {live.positions.get(selectedDevice.id) ? <p>{dateTime(live.positions.get(selectedDevice.id)?.fixTime ?? null)}</p> : <p>{t.map.noPosition}</p>}
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
      <MapView label={t.map.mapLabel} onLoad={onLoad} />
    </div>
  );
}

/** The status colours of styles.css, so a marker on the map matches its device's dot in the list. */
function statusColors(): Record<DeviceStatus, string> {
  const style = getComputedStyle(document.documentElement);
  const color = (status: DeviceStatus) => style.getPropertyValue(`--${status}`).trim();
  return { online: color('online'), offline: color('offline'), unknown: color('unknown') };
}

/**
 * The count on each cluster, as HTML over the map: a style may come without glyphs (the blank test
 * style has none), and the numbers must show on any. Hidden from screen readers, who have the list.
 */
function labelClusters(map: MapLibreMap, maplibre: MapLibre): void {
  const labels = new Map<number, Marker>();
  const update = () => {
    const seen = new Set<number>();
    for (const feature of map.querySourceFeatures('devices', { filter: ['has', 'point_count'] })) {
      const id = feature.properties?.cluster_id;
      if (typeof id !== 'number' || seen.has(id) || feature.geometry.type !== 'Point') continue;
      seen.add(id);
      const text = String(feature.properties?.point_count_abbreviated ?? feature.properties?.point_count);
      const lngLat = feature.geometry.coordinates as [number, number];
      const known = labels.get(id);
      if (known) {
        known.setLngLat(lngLat);
        known.getElement().textContent = text;
        continue;
      }
      const element = document.createElement('div');
      element.className = 'cluster-count';
      element.setAttribute('aria-hidden', 'true');
      element.textContent = text;
      labels.set(id, new maplibre.Marker({ element }).setLngLat(lngLat).addTo(map));
    }
    for (const [id, marker] of labels) {
      if (seen.has(id)) continue;
      marker.remove();
      labels.delete(id);
    }
  };
  map.on('moveend', update);
  map.on('sourcedata', (event) => {
    if (event.sourceId === 'devices' && event.isSourceLoaded) update();
  });
}
