import { useCallback, useEffect, useId, useRef } from 'react';
import type { FilterSpecification, GeoJSONSource, Map as MapLibreMap, Marker } from 'maplibre-gl';
import type { DeviceStatus } from '../../../../src/client/index.ts';
import { featureCollection } from '../geo.ts';
import type { LngLat } from '../geo.ts';
import type { MapLibre } from '../MapView.tsx';
import { useMap } from '../MapView.tsx';
import { useMapLayer } from '../useMapLayer.ts';
import type { MapLayerScope } from '../useMapLayer.ts';

export interface DevicePoint {
  id: number;
  name: string;
  status: DeviceStatus;
  selected: boolean;
  at: LngLat;
}

/**
 * The fleet's devices in their status colours, each named beside its marker, clustered when close (a
 * cluster shows its count); a click on one picks it, a click on a cluster zooms into it.
 */
export function DevicePositions({ points, onSelect }: { points: DevicePoint[]; onSelect: (id: number) => void }) {
  const id = useId();
  const { map } = useMap();
  const select = useRef(onSelect);
  useEffect(() => {
    select.current = onSelect;
  }, [onSelect]);

  const add = useCallback(
    ({ map, maplibre, addSource, addLayer, listen }: MapLayerScope) => {
      const color = statusColors();
      const clusters = `${id}-clusters`;
      const devices = `${id}-devices`;
      addSource(id, { type: 'geojson', data: featureCollection([]), cluster: true, clusterRadius: 40, clusterMaxZoom: 15 });
      addLayer({
        id: clusters,
        type: 'circle',
        source: id,
        filter: ['has', 'point_count'],
        paint: {
          'circle-color': '#1d6fd8',
          'circle-opacity': 0.85,
          'circle-stroke-color': '#ffffff',
          'circle-stroke-width': 2,
          'circle-radius': ['step', ['get', 'point_count'], 14, 10, 18, 100, 24, 1000, 30],
        },
      });
      addLayer({
        id: devices,
        type: 'circle',
        source: id,
        filter: ['!', ['has', 'point_count']],
        paint: {
          'circle-color': ['match', ['get', 'status'], 'online', color.online, 'unknown', color.unknown, color.offline],
          'circle-radius': ['case', ['get', 'selected'], 10, 7],
          'circle-stroke-color': ['case', ['get', 'selected'], '#111827', '#ffffff'],
          'circle-stroke-width': ['case', ['get', 'selected'], 3, 2],
        },
      });
      listen(
        map.on('click', devices, (event) => {
          const device = event.features?.[0]?.properties?.id;
          if (typeof device === 'number') select.current(device);
        }),
      );
      listen(
        map.on('click', clusters, (event) => {
          const feature = event.features?.[0];
          const clusterId = feature?.properties?.cluster_id;
          if (!feature || typeof clusterId !== 'number' || feature.geometry.type !== 'Point') return;
          const center = feature.geometry.coordinates as LngLat;
          void (map.getSource(id) as GeoJSONSource).getClusterExpansionZoom(clusterId).then((zoom) => map.easeTo({ center, zoom }));
        }),
      );
      for (const layer of [devices, clusters]) {
        listen(map.on('mouseenter', layer, () => (map.getCanvas().style.cursor = 'pointer')));
        listen(map.on('mouseleave', layer, () => (map.getCanvas().style.cursor = '')));
      }
      const removeCounts = htmlLabels(map, maplibre, id, listen, {
        filter: ['has', 'point_count'],
        key: (properties) => `c${String(properties.cluster_id)}`,
        text: (properties) => String(properties.point_count_abbreviated ?? properties.point_count),
        className: 'cluster-count',
      });
      const removeNames = htmlLabels(map, maplibre, id, listen, {
        filter: ['!', ['has', 'point_count']],
        key: (properties) => `d${String(properties.id)}`,
        text: (properties) => String(properties.name),
        className: 'device-label',
        anchor: 'left',
        offset: [12, 0],
      });
      return () => {
        removeCounts();
        removeNames();
        // Left while the pointer was over a marker: the next screen's map starts with the plain cursor.
        map.getCanvas().style.cursor = '';
      };
    },
    [id],
  );
  useMapLayer(add);

  useEffect(() => {
    const features = points.map((point) => ({
      type: 'Feature' as const,
      properties: { id: point.id, name: point.name, status: point.status, selected: point.selected },
      geometry: { type: 'Point' as const, coordinates: point.at },
    }));
    (map.getSource(id) as GeoJSONSource | undefined)?.setData(featureCollection(features));
  }, [map, id, points, add]);

  return null;
}

/** The status colours of styles.css, so a marker on the map matches its device's dot in the list. */
function statusColors(): Record<DeviceStatus, string> {
  const style = getComputedStyle(document.documentElement);
  const color = (status: DeviceStatus) => style.getPropertyValue(`--${status}`).trim();
  return { online: color('online'), offline: color('offline'), unknown: color('unknown') };
}

/** Labels beyond this many in view are left out: past it they would cover each other and the map. */
const MAX_LABELS = 150;

/**
 * Text beside the features of a source (a cluster's count, a device's name), as HTML over the map: a
 * style may come without glyphs (the blank test style has none), and the words must show on any.
 * Only the features in view are labelled. Hidden from screen readers, who have the list. Returns what
 * removes the labels.
 */
function htmlLabels(
  map: MapLibreMap,
  maplibre: MapLibre,
  source: string,
  listen: MapLayerScope['listen'],
  { filter, key, text, className, anchor = 'center', offset = [0, 0] }: {
    filter: FilterSpecification;
    key: (properties: Record<string, unknown>) => string;
    text: (properties: Record<string, unknown>) => string;
    className: string;
    anchor?: 'center' | 'left';
    offset?: [number, number];
  },
): () => void {
  const labels = new Map<string, Marker>();
  const update = () => {
    const seen = new Set<string>();
    const bounds = map.getBounds();
    for (const feature of map.querySourceFeatures(source, { filter })) {
      if (seen.size >= MAX_LABELS) break;
      const properties = feature.properties ?? {};
      const id = key(properties);
      if (seen.has(id) || feature.geometry.type !== 'Point') continue;
      const lngLat = feature.geometry.coordinates as LngLat;
      if (!bounds.contains(lngLat)) continue;
      seen.add(id);
      const known = labels.get(id);
      if (known) {
        known.setLngLat(lngLat);
        known.getElement().textContent = text(properties);
        continue;
      }
      const element = document.createElement('div');
      element.className = className;
      element.setAttribute('aria-hidden', 'true');
      element.textContent = text(properties);
      labels.set(id, new maplibre.Marker({ element, anchor, offset }).setLngLat(lngLat).addTo(map));
    }
    for (const [id, marker] of labels) {
      if (seen.has(id)) continue;
      marker.remove();
      labels.delete(id);
    }
  };
  listen(map.on('moveend', update));
  listen(
    map.on('sourcedata', (event) => {
      if (event.sourceId === source && event.isSourceLoaded) update();
    }),
  );
  return () => {
    for (const marker of labels.values()) marker.remove();
    labels.clear();
  };
}
