import { useCallback, useEffect, useId, useRef } from 'react';
import type { Dispatch, SetStateAction } from 'react';
import type { GeoJSONSource, MapLayerMouseEvent, MapLayerTouchEvent, MapMouseEvent, MapTouchEvent } from 'maplibre-gl';
import { addPoint, closes, draftShape, endDrag, handles, insertVertex, moveVertex } from '../../screens/geofence-draft.ts';
import type { Draft } from '../../screens/geofence-draft.ts';
import { featureCollection, shapeFeature } from '../geo.ts';
import type { LngLat } from '../geo.ts';
import { useMap } from '../MapView.tsx';
import { useMapLayer } from '../useMapLayer.ts';
import type { MapLayerScope } from '../useMapLayer.ts';

/** How near the first corner a click closes a polygon being drawn. */
const CLOSE_PIXELS = 10;

/**
 * The geofence being drawn: its shape, its corners and the dots between them. Clicks on the map add
 * corners; a corner or a dot dragged moves or adds one. Without a draft it draws nothing and ignores clicks.
 */
export function GeofenceDraft({ draft, onChange }: { draft: Draft | undefined; onChange: Dispatch<SetStateAction<Draft | undefined>> }) {
  const id = useId();
  const { map } = useMap();
  // The handlers, added once, read the draft of the latest render.
  const drafting = useRef(draft);
  useEffect(() => {
    drafting.current = draft;
  }, [draft]);

  const add = useCallback(
    ({ map, addSource, addLayer, listen }: MapLayerScope) => {
      const vertices = `${id}-vertices`;
      const midpoints = `${id}-midpoints`;
      addSource(id, { type: 'geojson', data: featureCollection([]) });
      addLayer({ id: `${id}-fill`, type: 'fill', source: id, filter: ['==', '$type', 'Polygon'], paint: { 'fill-color': '#d93025', 'fill-opacity': 0.15 } });
      addLayer({ id: `${id}-line`, type: 'line', source: id, filter: ['!=', '$type', 'Point'], paint: { 'line-color': '#d93025', 'line-width': 2, 'line-dasharray': [2, 1] } });
      addLayer({
        id: midpoints,
        type: 'circle',
        source: id,
        filter: ['==', ['get', 'role'], 'midpoint'],
        paint: { 'circle-color': '#fff', 'circle-radius': 5, 'circle-stroke-color': '#d93025', 'circle-stroke-width': 2 },
      });
      addLayer({
        id: vertices,
        type: 'circle',
        source: id,
        filter: ['==', ['get', 'role'], 'vertex'],
        paint: {
          // The chosen corner larger and ringed in black, apart from the white dots between corners.
          'circle-color': '#d93025',
          'circle-radius': ['case', ['get', 'selected'], 9, 6],
          'circle-stroke-color': ['case', ['get', 'selected'], '#111', '#fff'],
          'circle-stroke-width': ['case', ['get', 'selected'], 3, 2],
        },
      });
      const handleLayers = [vertices, midpoints];
      listen(
        map.on('click', (event: MapMouseEvent) => {
          const current = drafting.current;
          if (!current) return;
          const first = current.points[0];
          // Measured here too, as the handles are not hit-testable while the map redraws them after a quick click.
          if (first && closes(current, 0) && map.project(first).dist(event.point) <= CLOSE_PIXELS) {
            onChange((latest) => latest && { ...latest, finished: true });
          } else if (map.queryRenderedFeatures(event.point, { layers: handleLayers }).length === 0) {
            const point: LngLat = [event.lngLat.lng, event.lngLat.lat];
            onChange((latest) => latest && addPoint(latest, point));
          }
        }),
      );

      const canvas = map.getCanvasContainer();
      let endGrab: (() => void) | undefined;
      /**
       * Dragging a handle: a corner moves with the pointer; a midpoint becomes a corner first. The map
       * does not pan meanwhile. A press without a move chooses the corner, or closes a polygon being
       * drawn when it is the first corner.
       */
      const grab = (event: MapLayerMouseEvent | MapLayerTouchEvent, touch: boolean) => {
        const properties = event.features?.[0]?.properties;
        if (!properties || (touch && (event as MapLayerTouchEvent).points.length !== 1)) return;
        event.preventDefault();
        map.dragPan.disable();
        const grabbed = Number(properties.index);
        const inserting = properties.role === 'midpoint';
        if (inserting) onChange((current) => current && insertVertex(current, grabbed));
        // A midpoint's new corner comes right after the corner its edge leaves.
        const index = inserting ? grabbed + 1 : grabbed;
        let moved = false;
        const follow = (move: MapMouseEvent | MapTouchEvent) => {
          moved = true;
          onChange((current) => current && moveVertex(current, index, [move.lngLat.lng, move.lngLat.lat]));
        };
        const moveType = touch ? 'touchmove' : 'mousemove';
        const releaseType = touch ? 'touchend' : 'mouseup';
        const stop = () => {
          map.off(moveType, follow);
          window.removeEventListener(releaseType, release);
          map.dragPan.enable();
          canvas.style.cursor = '';
          endGrab = undefined;
        };
        const release = () => {
          stop();
          onChange((current) => current && endDrag(current, index, moved, inserting));
        };
        endGrab = stop;
        canvas.style.cursor = 'move';
        map.on(moveType, follow);
        // On the window, so a release outside the map still ends the drag.
        window.addEventListener(releaseType, release);
      };
      for (const layer of handleLayers) {
        listen(map.on('mousedown', layer, (event) => grab(event, false)));
        listen(map.on('touchstart', layer, (event) => grab(event, true)));
        listen(map.on('mouseenter', layer, () => (canvas.style.cursor = 'move')));
        listen(map.on('mouseleave', layer, () => (canvas.style.cursor = '')));
      }
      // Leaving the screen mid-drag, or over a handle, leaves the map panning and its pointer as they were.
      return () => {
        endGrab?.();
        canvas.style.cursor = '';
      };
    },
    [id, onChange],
  );
  useMapLayer(add);

  useEffect(() => {
    const shape = draft && draftShape(draft);
    (map.getSource(id) as GeoJSONSource | undefined)?.setData(featureCollection([...(shape ? [shapeFeature(shape)] : []), ...(draft ? handles(draft) : [])]));
  }, [map, id, draft, add]);
  return null;
}
