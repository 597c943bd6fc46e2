import { useCallback, useEffect, useId } from 'react';
import type { Feature } from 'geojson';
import type { GeoJSONSource } from 'maplibre-gl';
import { featureCollection } from '../geo.ts';
import { useMap } from '../MapView.tsx';
import { useMapLayer } from '../useMapLayer.ts';
import type { MapLayerScope } from '../useMapLayer.ts';

/** Saved geofences: their areas shaded, their outlines and routes drawn; the one chosen in the list (`selected`) stronger. */
export function GeofenceAreas({ features }: { features: Feature[] }) {
  const id = useId();
  const { map } = useMap();
  const add = useCallback(
    ({ addSource, addLayer }: MapLayerScope) => {
      addSource(id, { type: 'geojson', data: featureCollection([]) });
      addLayer({
        id: `${id}-fill`,
        type: 'fill',
        source: id,
        filter: ['==', '$type', 'Polygon'],
        paint: { 'fill-color': '#1d6fd8', 'fill-opacity': ['case', ['==', ['get', 'selected'], true], 0.35, 0.15] },
      });
      addLayer({
        id: `${id}-line`,
        type: 'line',
        source: id,
        paint: { 'line-color': ['case', ['==', ['get', 'selected'], true], '#0b3d91', '#1d6fd8'], 'line-width': ['case', ['==', ['get', 'selected'], true], 4, 2] },
      });
    },
    [id],
  );
  useMapLayer(add);
  useEffect(() => {
    (map.getSource(id) as GeoJSONSource | undefined)?.setData(featureCollection(features));
  }, [map, id, features, add]);
  return null;
}
