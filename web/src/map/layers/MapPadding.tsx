import { useEffect } from 'react';
import { useMap } from '../MapView.tsx';

/**
 * Room kept free at the bottom of the map (a phone's device sheet covers it): the map centres and fits
 * in the part above. Taken off again on leaving, so the next screen has the whole map.
 */
export function MapPadding({ bottom }: { bottom: number }) {
  const { map } = useMap();
  useEffect(() => {
    map.setPadding({ top: 0, right: 0, left: 0, bottom });
  }, [map, bottom]);
  useEffect(() => () => void map.setPadding({ top: 0, right: 0, left: 0, bottom: 0 }), [map]);
  return null;
}
