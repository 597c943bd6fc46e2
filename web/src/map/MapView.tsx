import { createContext, use, useEffect, useLayoutEffect, useRef, useState, useSyncExternalStore } from 'react';
import type { ReactNode } from 'react';
import type { ErrorEvent as MapErrorEvent, MapSourceDataEvent, Map as MapLibreMap } from 'maplibre-gl';
import type * as MapLibreModule from 'maplibre-gl';
import { settings } from '../api.ts';
import { t } from '../i18n.ts';
import { Loading } from '../ui.tsx';

export type MapLibre = typeof MapLibreModule;

export interface SharedMap {
  map: MapLibreMap;
  maplibre: MapLibre;
  /** The element MapLibre draws in: moved into whichever screen shows the map. */
  element: HTMLDivElement;
}

/**
 * The one map of the app, made on the first screen that shows a map and kept for every later one:
 * MapLibre, its style and its tiles load once, and the camera stays where the user left it. A failed
 * load is forgotten, so the next screen tries again.
 */
let shared: Promise<SharedMap> | undefined;

/**
 * The style's sources whose tiles fail to load (none on a machine with its network), kept for the life
 * of the map: a source leaves the set once one of its tiles loads.
 */
const failingSources = new Set<string>();
const tileListeners = new Set<() => void>();
let tilesFailing = false;

function noteTiles(): void {
  const failing = failingSources.size > 0;
  if (failing === tilesFailing) return;
  tilesFailing = failing;
  for (const listener of tileListeners) listener();
}

/** Whether the map's background tiles fail to load: the map still works, but shows no streets. */
function useTilesFailing(): boolean {
  return useSyncExternalStore(
    (listener) => {
      tileListeners.add(listener);
      return () => tileListeners.delete(listener);
    },
    () => tilesFailing,
  );
}

/** Watches the sources for tiles that fail and tiles that load (only the style's sources fetch any: the layers' GeoJSON is in the page). */
function watchTiles(map: MapLibreMap): void {
  map.on('error', (event: MapErrorEvent & { sourceId?: string }) => {
    if (event.sourceId === undefined) return;
    failingSources.add(event.sourceId);
    noteTiles();
  });
  map.on('data', (event) => {
    const data = event as MapSourceDataEvent;
    if (data.dataType !== 'source' || !data.tile || !failingSources.has(data.sourceId)) return;
    failingSources.delete(data.sourceId);
    noteTiles();
  });
}

function sharedMap(): Promise<SharedMap> {
  shared ??= import('./maplibre.ts')
    .then(
      ({ default: maplibre }) =>
        new Promise<SharedMap>((resolve, reject) => {
          const element = document.createElement('div');
          element.className = 'map-instance';
          const map = new maplibre.Map({ container: element, style: settings.mapStyleUrl, center: [10, 30], zoom: 1.5, attributionControl: { compact: true } });
          map.addControl(new maplibre.NavigationControl({ showCompass: false }), 'top-right');
          // Only the style failing means no map. A source's errors (a tile that fails, as every tile does
          // without a network) are MapLibre's to retry, and the map loads without them.
          const failed = (event: MapErrorEvent) => {
            if ('sourceId' in event) return;
            map.off('error', failed);
            map.remove();
            failingSources.clear();
            noteTiles();
            reject(event.error);
          };
          map.on('error', failed);
          watchTiles(map);
          map.once('load', () => {
            map.off('error', failed);
            resolve({ map, maplibre, element });
          });
        }),
    )
    .catch((error: unknown) => {
      shared = undefined;
      throw error;
    });
  return shared;
}

/** The shared map once it is ready, for screens that act on it outside its layers (fit to a shape, read its centre). */
export function useSharedMap(): { state: 'loading' | 'ready' | 'failed'; shared?: SharedMap } {
  const [result, setResult] = useState<{ state: 'loading' | 'ready' | 'failed'; shared?: SharedMap }>({ state: 'loading' });
  useEffect(() => {
    let current = true;
    sharedMap().then(
      (ready) => current && setResult({ state: 'ready', shared: ready }),
      () => current && setResult({ state: 'failed' }),
    );
    return () => {
      current = false;
    };
  }, []);
  return result;
}

const MapContext = createContext<SharedMap | undefined>(undefined);

/** The map, for the layer components inside a `<MapView>`: they render only once it is ready. */
export function useMap(): SharedMap {
  const map = use(MapContext);
  if (!map) throw new Error('A map layer is rendered outside <MapView>.');
  return map;
}

/**
 * Where a screen shows the shared map: the map's element moves in here while the screen is shown,
 * and the layer components among `children` put their sources, layers and handlers on it and take
 * them off again when they unmount. `busy`: the screen's data is on its way, so the map says it is
 * loading and takes no clicks.
 */
export function MapView({ label, className = 'map', busy = false, children }: { label: string; className?: string; busy?: boolean; children?: ReactNode }) {
  const container = useRef<HTMLDivElement>(null);
  const { state, shared: ready } = useSharedMap();
  const noTiles = useTilesFailing();
  // A layout effect, so the map is in place (and sized) before the layers' effects draw on it.
  useLayoutEffect(() => {
    const parent = container.current;
    if (!ready || !parent) return;
    parent.appendChild(ready.element);
    ready.map.resize();
    return () => ready.element.remove();
  }, [ready]);
  return (
    <div className={className}>
      <div ref={container} className="map-canvas" role="region" aria-label={label} data-state={state} />
      {ready && <MapContext value={ready}>{children}</MapContext>}
      {(state === 'loading' || busy) && (
        // While the screen's data is on its way the map takes no clicks (the overlay catches them): it is about to move.
        <div className="map-busy" data-busy={busy}>
          <Loading />
        </div>
      )}
      {state === 'ready' && noTiles && (
        <p className="note info map-notice" role="status">
          {t.map.tilesFailed}
        </p>
      )}
      {state === 'failed' && (
        <p className="note error" role="alert">
          {t.map.mapUnavailable}
        </p>
      )}
    </div>
  );
}
