import { useEffect } from 'react';
import type { LayerSpecification, Map as MapLibreMap, SourceSpecification, Subscription } from 'maplibre-gl';
import { useMap } from './MapView.tsx';
import type { MapLibre } from './MapView.tsx';

/** What a layer component adds to the map, each thing remembered so that unmounting takes it all off again. */
export interface MapLayerScope {
  map: MapLibreMap;
  maplibre: MapLibre;
  addSource(id: string, source: SourceSpecification): void;
  addLayer(layer: LayerSpecification): void;
  /** A handler from `map.on(…)`, removed with the layers. */
  listen(subscription: Subscription): void;
}

/**
 * The one way a component draws on the shared map: `add` puts its sources, layers and handlers on it
 * when the component mounts, and they all come off when it unmounts (or `add` changes: keep it
 * stable with useCallback), so the next screen finds the map bare. What `add` returns runs first on
 * the way out, for what it made besides (markers, window listeners).
 */
export function useMapLayer(add: (scope: MapLayerScope) => (() => void) | void): void {
  const { map, maplibre, element } = useMap();
  useEffect(() => {
    const sources: string[] = [];
    const layers: string[] = [];
    const subscriptions: Subscription[] = [];
    const cleanup = add({
      map,
      maplibre,
      addSource: (id, source) => {
        map.addSource(id, source);
        sources.push(id);
      },
      addLayer: (layer) => {
        map.addLayer(layer);
        layers.push(layer.id);
      },
      listen: (subscription) => subscriptions.push(subscription),
    });
    count(map, element);
    return () => {
      cleanup?.();
      for (const subscription of subscriptions) subscription.unsubscribe();
      for (const id of layers.toReversed()) if (map.getLayer(id)) map.removeLayer(id);
      for (const id of sources) if (map.getSource(id)) map.removeSource(id);
      count(map, element);
    };
  }, [map, maplibre, element, add]);
}

/** The map's own layers and sources beside the style's, on its element: what a look at the page (or a test) can check for leftovers. */
function count(map: MapLibreMap, element: HTMLElement): void {
  element.dataset.layers = String(map.getLayersOrder().length);
  element.dataset.sources = String(Object.keys(map.getStyle().sources).length);
}
