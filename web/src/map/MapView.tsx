import { useEffect, useRef, useState } from 'react';
import type { Map as MapLibreMap } from 'maplibre-gl';
import type * as MapLibreModule from 'maplibre-gl';
import { settings } from '../api.ts';
import { t } from '../i18n.ts';
import { Loading } from '../ui.tsx';

export type MapLibre = typeof MapLibreModule;

/** A MapLibre map on MAP_STYLE_URL; `onLoad` gets the map and the library once the style is in. */
export function MapView({ label, onLoad, className = 'map' }: { label: string; onLoad: (map: MapLibreMap, maplibre: MapLibre) => void; className?: string }) {
  const container = useRef<HTMLDivElement>(null);
  const loaded = useRef(onLoad);
  loaded.current = onLoad;
  const [state, setState] = useState<'loading' | 'ready' | 'failed'>('loading');
  useEffect(() => {
    let map: MapLibreMap | undefined;
    let cancelled = false;
    import('./maplibre.ts')
      .then(({ default: maplibre }) => {
        if (cancelled || !container.current) return;
        const created = new maplibre.Map({ container: container.current, style: settings.mapStyleUrl, center: [10, 30], zoom: 1.5, attributionControl: { compact: true } });
        map = created;
        created.addControl(new maplibre.NavigationControl({ showCompass: false }), 'top-right');
        created.on('load', () => {
          setState('ready');
          loaded.current(created, maplibre);
        });
      })
      .catch(() => setState('failed'));
    return () => {
      cancelled = true;
      map?.remove();
    };
  }, []);
  return (
    <div className={className}>
      <div ref={container} className="map-canvas" role="region" aria-label={label} data-state={state} />
      {state === 'loading' && <Loading />}
      {state === 'failed' && (
        <p className="note error" role="alert">
          {t.map.mapUnavailable}
        </p>
      )}
    </div>
  );
}
