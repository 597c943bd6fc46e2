import { useCallback, useEffect, useId } from 'react';
import type { GeoJSONSource } from 'maplibre-gl';
import { featureCollection } from '../geo.ts';
import type { LngLat } from '../geo.ts';
import { useMap } from '../MapView.tsx';
import { useMapLayer } from '../useMapLayer.ts';
import type { MapLayerScope } from '../useMapLayer.ts';

/** A travelled route as one line. */
export function RoutePath({ coordinates }: { coordinates: LngLat[] }) {
  const id = useId();
  const { map } = useMap();
  const add = useCallback(
    ({ addSource, addLayer }: MapLayerScope) => {
      addSource(id, { type: 'geojson', data: featureCollection([]) });
      addLayer({ id, type: 'line', source: id, paint: { 'line-color': '#1d6fd8', 'line-width': 4 }, layout: { 'line-cap': 'round', 'line-join': 'round' } });
    },
    [id],
  );
  useMapLayer(add);
  // After the layer's effect, and again whenever it is added anew.
  useEffect(() => {
    (map.getSource(id) as GeoJSONSource | undefined)?.setData(
      featureCollection(coordinates.length > 1 ? [{ type: 'Feature', properties: {}, geometry: { type: 'LineString', coordinates } }] : []),
    );
  }, [map, id, coordinates, add]);
  return null;
}
