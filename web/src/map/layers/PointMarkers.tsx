import { useCallback, useEffect, useId } from 'react';
import type { GeoJSONSource } from 'maplibre-gl';
import { featureCollection } from '../geo.ts';
import type { LngLat } from '../geo.ts';
import { useMap } from '../MapView.tsx';
import { useMapLayer } from '../useMapLayer.ts';
import type { MapLayerScope } from '../useMapLayer.ts';

/** Plain dots: the devices behind a geofence being drawn, or the moment a history playback is at. */
export function PointMarkers({ points, color, radius }: { points: LngLat[]; color: string; radius: number }) {
  const id = useId();
  const { map } = useMap();
  const add = useCallback(
    ({ addSource, addLayer }: MapLayerScope) => {
      addSource(id, { type: 'geojson', data: featureCollection([]) });
      addLayer({ id, type: 'circle', source: id, paint: { 'circle-color': color, 'circle-radius': radius, 'circle-stroke-color': '#fff', 'circle-stroke-width': 2 } });
    },
    [id, color, radius],
  );
  useMapLayer(add);
  useEffect(() => {
    const features = points.map((point) => ({ type: 'Feature' as const, properties: {}, geometry: { type: 'Point' as const, coordinates: point } }));
    (map.getSource(id) as GeoJSONSource | undefined)?.setData(featureCollection(features));
  }, [map, id, points, add]);
  return null;
}
