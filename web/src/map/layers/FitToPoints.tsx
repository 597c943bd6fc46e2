import { useEffect, useRef } from 'react';
import type { LngLat } from '../geo.ts';
import { useMap } from '../MapView.tsx';

/**
 * The camera around `points`: each time they change, or with `once` only the first time there are
 * any (the fleet screen opens on its devices, then the user moves the map).
 */
export function FitToPoints({ points, once = false, padding = 50, maxZoom = 15 }: { points: LngLat[]; once?: boolean; padding?: number; maxZoom?: number }) {
  const { map, maplibre } = useMap();
  const fitted = useRef(false);
  useEffect(() => {
    if (points.length === 0 || (once && fitted.current)) return;
    fitted.current = true;
    const bounds = new maplibre.LngLatBounds();
    for (const point of points) bounds.extend(point);
    map.fitBounds(bounds, { padding, maxZoom, duration: 0 });
  }, [map, maplibre, points, once, padding, maxZoom]);
  return null;
}

/** The camera kept on a moving point (a followed device). */
export function FollowPoint({ point }: { point: LngLat | undefined }) {
  const { map } = useMap();
  const [lng, lat] = point ?? [];
  useEffect(() => {
    if (lng !== undefined && lat !== undefined) map.easeTo({ center: [lng, lat], duration: 500 });
  }, [map, lng, lat]);
  return null;
}
