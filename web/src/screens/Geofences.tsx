import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useRef, useState } from 'react';
import type { FormEvent } from 'react';
import type { Feature } from 'geojson';
import type { GeoJSONSource, MapLayerMouseEvent, MapLayerTouchEvent, Map as MapLibreMap, MapMouseEvent, MapTouchEvent } from 'maplibre-gl';
import type { Geofence } from '../../../src/client/index.ts';
import { api } from '../api.ts';
import { t } from '../i18n.ts';
import { distance, featureCollection, fromWkt, midpoint, shapeBounds, shapeFeature, toWkt } from '../map/geo.ts';
import type { LngLat, Shape } from '../map/geo.ts';
import { MapView } from '../map/MapView.tsx';
import type { MapLibre } from '../map/MapView.tsx';
import { useLive } from '../live.ts';
import { ErrorNote, Field, Loading } from '../ui.tsx';

type Kind = Shape['kind'];

interface Draft {
  /** The geofence being edited, or undefined for a new one. */
  id: number | undefined;
  name: string;
  description: string;
  kind: Kind;
  points: LngLat[];
  radius: number;
  lineWidth: number;
  /** Polygons and lines are finished by the user; a circle by its second click. */
  finished: boolean;
  /** The corner the form's editing buttons act on. */
  selected: number;
  /** The last edit, announced to screen readers. */
  notice: string;
}

type PathKind = Exclude<Kind, 'circle'>;

const NEW_DRAFT: Draft = { id: undefined, name: '', description: '', kind: 'polygon', points: [], radius: 100, lineWidth: 25, finished: false, selected: 0, notice: '' };

const MINIMUM_POINTS: Record<PathKind, number> = { polygon: 3, line: 2 };
/** How near the first corner a click closes a polygon being drawn. */
const CLOSE_PIXELS = 10;

function draftShape(draft: Draft): Shape | undefined {
  if (draft.kind === 'circle') return draft.points[0] ? { kind: 'circle', center: draft.points[0], radius: draft.radius } : undefined;
  return draft.points.length > 0 ? { kind: draft.kind, points: draft.points } : undefined;
}

function complete(draft: Draft): boolean {
  if (draft.kind === 'circle') return draft.points.length === 1 && draft.radius > 0;
  return draft.finished && draft.points.length >= MINIMUM_POINTS[draft.kind];
}

/** A finished polygon or route: its corners can be chosen, moved, added and deleted. */
function editablePath(draft: Draft): draft is Draft & { kind: PathKind } {
  return draft.kind !== 'circle' && complete(draft);
}

/** The name of a corner, a route point or a circle's centre, for the notices. */
function vertexName(kind: Kind, index: number): string {
  return kind === 'circle' ? t.geofences.centre : t.geofences.vertex[kind](index + 1);
}

function moveVertex(draft: Draft, index: number, point: LngLat): Draft {
  return { ...draft, points: draft.points.map((existing, i) => (i === index ? point : existing)) };
}

/** A new corner halfway along the edge that leaves corner `after`; a polygon's last edge closes the ring. */
function insertVertex(draft: Draft, after: number): Draft {
  const from = draft.points[after] as LngLat;
  const to = draft.points[(after + 1) % draft.points.length] as LngLat;
  const points = [...draft.points.slice(0, after + 1), midpoint(from, to), ...draft.points.slice(after + 1)];
  return { ...draft, points, selected: after + 1, notice: t.geofences.inserted(vertexName(draft.kind, after + 1)) };
}

function deleteVertex(draft: Draft, index: number): Draft {
  const points = draft.points.filter((_, i) => i !== index);
  return { ...draft, points, selected: Math.min(index, points.length - 1), notice: t.geofences.deleted(vertexName(draft.kind, index)) };
}

function pointFeature(point: LngLat, properties: Record<string, unknown>): Feature {
  return { type: 'Feature', properties, geometry: { type: 'Point', coordinates: point } };
}

/** The handles drawn over the draft: its corners, and on a finished shape a dot halfway along each edge to add a corner there. */
function handles(draft: Draft): Feature[] {
  const editable = editablePath(draft);
  const vertices = draft.points.map((point, index) => pointFeature(point, { role: 'vertex', index, selected: editable && index === draft.selected }));
  if (!editable) return vertices;
  const edges = draft.kind === 'polygon' ? draft.points.length : draft.points.length - 1;
  const midpoints = Array.from({ length: edges }, (_, index) =>
    pointFeature(midpoint(draft.points[index] as LngLat, draft.points[(index + 1) % draft.points.length] as LngLat), { role: 'midpoint', index }),
  );
  return [...midpoints, ...vertices];
}

function draftOf(geofence: Geofence): Draft {
  const shape = fromWkt(geofence.area);
  const lineWidth = Number(geofence.attributes.polylineDistance ?? 25);
  const base = { ...NEW_DRAFT, id: geofence.id, name: geofence.name, description: geofence.description ?? '', lineWidth, finished: true };
  if (!shape) return base;
  return shape.kind === 'circle' ? { ...base, kind: 'circle', points: [shape.center], radius: shape.radius } : { ...base, kind: shape.kind, points: shape.points };
}

/** The keyboard's way to edit a finished polygon or route: choose a corner, then move it to the map centre, add one after it or delete it. */
function CornerEditor({ draft, map, onChange }: { draft: Draft & { kind: PathKind }; map: MapLibreMap; onChange: (draft: Draft) => void }) {
  const id = useId();
  const { kind, points } = draft;
  const selected = Math.min(draft.selected, points.length - 1);
  const number = selected + 1;
  const atMinimum = points.length <= MINIMUM_POINTS[kind];
  const choose = (index: number) => {
    onChange({ ...draft, selected: index });
    map.jumpTo({ center: points[index] as LngLat });
  };
  return (
    <fieldset className="stack">
      <legend>{t.geofences.corners[kind]}</legend>
      <p className="hint" id={`${id}-hint`}>
        {t.geofences.cornersHint[kind]}
      </p>
      <div className="field">
        <label htmlFor={id}>{t.geofences.vertexLabel[kind]}</label>
        <select id={id} aria-describedby={`${id}-hint`} value={selected} onChange={(e) => choose(Number(e.target.value))}>
          {points.map((_, index) => (
            <option key={index} value={index}>
              {t.geofences.vertex[kind](index + 1)}
            </option>
          ))}
        </select>
      </div>
      <div className="row wrap">
        <button
          type="button"
          onClick={() => onChange({ ...moveVertex(draft, selected, map.getCenter().toArray() as LngLat), notice: t.geofences.moved(vertexName(kind, selected)) })}
        >
          {t.geofences.moveVertex[kind](number)}
        </button>
        <button type="button" disabled={kind === 'line' && selected === points.length - 1} onClick={() => onChange(insertVertex(draft, selected))}>
          {t.geofences.insertVertex[kind](number)}
        </button>
        <button type="button" disabled={atMinimum} onClick={() => onChange(deleteVertex(draft, selected))}>
          {t.geofences.deleteVertex[kind](number)}
        </button>
      </div>
      {atMinimum && <p className="hint">{t.geofences.minimum[kind]}</p>}
    </fieldset>
  );
}

export default function Geofences() {
  const queryClient = useQueryClient();
  const geofences = useQuery({ queryKey: ['geofences'], queryFn: () => api.geofences() });
  const live = useLive();
  const [draft, setDraft] = useState<Draft | undefined>();
  const [map, setMap] = useState<MapLibreMap>();
  const drafting = useRef(draft);
  drafting.current = draft;

  const refresh = () => void queryClient.invalidateQueries({ queryKey: ['geofences'] });
  const save = useMutation({
    mutationFn: (value: Draft) => {
      const shape = draftShape(value) as Shape;
      const body = {
        name: value.name.trim(),
        description: value.description.trim() || null,
        area: toWkt(shape),
        ...(value.kind === 'line' ? { attributes: { polylineDistance: value.lineWidth } } : {}),
      };
      return value.id === undefined ? api.createGeofence(body) : api.updateGeofence(value.id, body);
    },
    onSuccess: () => {
      setDraft(undefined);
      refresh();
    },
  });
  const remove = useMutation({ mutationFn: (id: number) => api.deleteGeofence(id), onSuccess: refresh });

  useEffect(() => {
    if (!map) return;
    const saved = (geofences.data ?? []).flatMap((geofence) => {
      if (geofence.id === draft?.id) return [];
      const shape = fromWkt(geofence.area);
      return shape ? [shapeFeature(shape, { id: geofence.id, name: geofence.name })] : [];
    });
    (map.getSource('geofences') as GeoJSONSource).setData(featureCollection(saved));
    const shape = draft && draftShape(draft);
    (map.getSource('draft') as GeoJSONSource).setData(featureCollection([...(shape ? [shapeFeature(shape)] : []), ...(draft ? handles(draft) : [])]));
  }, [map, geofences.data, draft]);

  // The devices where they are, so the user sees what an area will catch.
  useEffect(() => {
    if (!map) return;
    const points = [...live.positions.values()].map((position) => ({
      type: 'Feature' as const,
      properties: {},
      geometry: { type: 'Point' as const, coordinates: [position.longitude, position.latitude] },
    }));
    (map.getSource('devices') as GeoJSONSource).setData(featureCollection(points));
  }, [map, live.version, live.positions]);

  // The map opens on the user's devices, where geofences are drawn.
  const centered = useRef(false);
  useEffect(() => {
    if (!map || centered.current || live.positions.size === 0) return;
    centered.current = true;
    const [first] = live.positions.values();
    if (first) map.jumpTo({ center: [first.longitude, first.latitude], zoom: 14 });
  }, [map, live.positions, live.version]);
  useQuery({ queryKey: ['positions', 'latest'], queryFn: async () => { const positions = await api.latestPositions(); live.seed(positions); return positions; } });

  /**
   * A click on the map, or the map's centre for keyboard users: a corner, a route point, or a circle's
   * centre then its edge. A finished shape ignores clicks, so a stray one never undoes it.
   */
  const addPoint = (point: LngLat) => {
    const current = drafting.current;
    if (!current) return;
    if (current.kind === 'circle') {
      const center = current.points[0];
      if (!center) setDraft({ ...current, points: [point], finished: false });
      else if (!current.finished) setDraft({ ...current, radius: Math.max(1, Math.round(distance(center, point))), finished: true });
    } else if (!current.finished) {
      setDraft({ ...current, points: [...current.points, point] });
    }
  };

  const onLoad = (loaded: MapLibreMap, _maplibre: MapLibre) => {
    loaded.addSource('geofences', { type: 'geojson', data: featureCollection([]) });
    loaded.addSource('draft', { type: 'geojson', data: featureCollection([]) });
    loaded.addSource('devices', { type: 'geojson', data: featureCollection([]) });
    loaded.addLayer({ id: 'geofence-fill', type: 'fill', source: 'geofences', filter: ['==', '$type', 'Polygon'], paint: { 'fill-color': '#1d6fd8', 'fill-opacity': 0.15 } });
    loaded.addLayer({ id: 'geofence-line', type: 'line', source: 'geofences', paint: { 'line-color': '#1d6fd8', 'line-width': 2 } });
    loaded.addLayer({ id: 'draft-fill', type: 'fill', source: 'draft', filter: ['==', '$type', 'Polygon'], paint: { 'fill-color': '#d93025', 'fill-opacity': 0.15 } });
    loaded.addLayer({ id: 'draft-line', type: 'line', source: 'draft', filter: ['!=', '$type', 'Point'], paint: { 'line-color': '#d93025', 'line-width': 2, 'line-dasharray': [2, 1] } });
    loaded.addLayer({ id: 'devices', type: 'circle', source: 'devices', paint: { 'circle-color': '#1d6fd8', 'circle-radius': 6, 'circle-stroke-color': '#fff', 'circle-stroke-width': 2 } });
    loaded.addLayer({
      id: 'draft-midpoints',
      type: 'circle',
      source: 'draft',
      filter: ['==', ['get', 'role'], 'midpoint'],
      paint: { 'circle-color': '#fff', 'circle-radius': 5, 'circle-stroke-color': '#d93025', 'circle-stroke-width': 2 },
    });
    loaded.addLayer({
      id: 'draft-vertices',
      type: 'circle',
      source: 'draft',
      filter: ['==', ['get', 'role'], 'vertex'],
      paint: {
        // The chosen corner larger and ringed in black, apart from the white dots between corners.
        'circle-color': '#d93025',
        'circle-radius': ['case', ['get', 'selected'], 9, 6],
        'circle-stroke-color': ['case', ['get', 'selected'], '#111', '#fff'],
        'circle-stroke-width': ['case', ['get', 'selected'], 3, 2],
      },
    });
    const handleLayers = ['draft-vertices', 'draft-midpoints'];
    loaded.on('click', (event: MapMouseEvent) => {
      const current = drafting.current;
      const first = current?.points[0];
      // Measured here too, as the handles are not hit-testable while the map redraws them after a quick click.
      if (current?.kind === 'polygon' && !current.finished && first && current.points.length >= MINIMUM_POINTS.polygon && loaded.project(first).dist(event.point) <= CLOSE_PIXELS) {
        setDraft((latest) => latest && { ...latest, finished: true });
      } else if (loaded.queryRenderedFeatures(event.point, { layers: handleLayers }).length === 0) {
        addPoint([event.lngLat.lng, event.lngLat.lat]);
      }
    });

    const canvas = loaded.getCanvasContainer();
    /**
     * Dragging a handle: a corner moves with the pointer; a midpoint becomes a corner first. The map
     * does not pan meanwhile. A press without a move chooses the corner, or closes a polygon being
     * drawn when it is the first corner.
     */
    const grab = (event: MapLayerMouseEvent | MapLayerTouchEvent, touch: boolean) => {
      const properties = event.features?.[0]?.properties;
      if (!properties || (touch && (event as MapLayerTouchEvent).points.length !== 1)) return;
      event.preventDefault();
      loaded.dragPan.disable();
      const grabbed = Number(properties.index);
      const inserting = properties.role === 'midpoint';
      if (inserting) setDraft((current) => current && insertVertex(current, grabbed));
      // A midpoint's new corner comes right after the corner its edge leaves.
      const index = inserting ? grabbed + 1 : grabbed;
      let moved = false;
      const follow = (move: MapMouseEvent | MapTouchEvent) => {
        moved = true;
        setDraft((current) => current && moveVertex(current, index, [move.lngLat.lng, move.lngLat.lat]));
      };
      const release = () => {
        loaded.off('mousemove', follow);
        loaded.off('touchmove', follow);
        loaded.dragPan.enable();
        canvas.style.cursor = '';
        setDraft((current) => {
          if (!current) return current;
          if (moved) return { ...current, selected: index, notice: (inserting ? t.geofences.inserted : t.geofences.moved)(vertexName(current.kind, index)) };
          if (current.kind === 'polygon' && !current.finished && index === 0 && current.points.length >= MINIMUM_POINTS.polygon) return { ...current, finished: true };
          return { ...current, selected: index };
        });
      };
      canvas.style.cursor = 'move';
      loaded.on(touch ? 'touchmove' : 'mousemove', follow);
      // On the window, so a release outside the map still ends the drag.
      window.addEventListener(touch ? 'touchend' : 'mouseup', release, { once: true });
    };
    for (const layer of handleLayers) {
      loaded.on('mousedown', layer, (event) => grab(event, false));
      loaded.on('touchstart', layer, (event) => grab(event, true));
      loaded.on('mouseenter', layer, () => (canvas.style.cursor = 'move'));
      loaded.on('mouseleave', layer, () => (canvas.style.cursor = ''));
    }
    setMap(loaded);
  };

  /** Editing a saved geofence: the map shows all of it. */
  const edit = (geofence: Geofence) => {
    const next = draftOf(geofence);
    setDraft(next);
    const shape = draftShape(next);
    if (map && shape) map.fitBounds(shapeBounds(shape), { padding: 48, maxZoom: 17, duration: 0 });
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (draft && complete(draft)) save.mutate(draft);
  };
  const instructions = draft && { circle: t.geofences.drawCircle, polygon: t.geofences.drawPolygon, line: t.geofences.drawLine }[draft.kind];
  const restart = (changes: Partial<Draft>) => draft && setDraft({ ...draft, points: [], finished: false, selected: 0, notice: '', ...changes });

  return (
    <div className="map-screen">
      <aside className="panel">
        <h1>{t.geofences.title}</h1>
        <p>{t.geofences.intro}</p>
        {geofences.isPending && <Loading />}
        <ErrorNote error={geofences.error} onRetry={() => void geofences.refetch()} />
        {geofences.data?.length === 0 && !draft && <p>{t.geofences.empty}</p>}
        {!draft && (
          <>
            <ul className="plain">
              {geofences.data?.map((geofence) => (
                <li key={geofence.id} className="row spread">
                  <span>{geofence.name}</span>
                  <span className="row">
                    <button type="button" className="link" aria-label={`${t.edit} ${geofence.name}`} onClick={() => edit(geofence)}>
                      {t.edit}
                    </button>
                    <button
                      type="button"
                      className="link"
                      aria-label={`${t.delete} ${geofence.name}`}
                      onClick={() => window.confirm(t.geofences.confirmDelete(geofence.name)) && remove.mutate(geofence.id)}
                    >
                      {t.delete}
                    </button>
                  </span>
                </li>
              ))}
            </ul>
            <ErrorNote error={remove.error} />
            <button type="button" className="primary" onClick={() => setDraft(NEW_DRAFT)}>
              {t.geofences.new}
            </button>
          </>
        )}
        {draft && (
          <form onSubmit={submit} className="stack">
            <Field label={t.fields.name} required maxLength={128} value={draft.name} onChange={(e) => setDraft({ ...draft, name: e.target.value })} />
            <Field label={t.geofences.description} maxLength={512} value={draft.description} onChange={(e) => setDraft({ ...draft, description: e.target.value })} />
            <fieldset className="row wrap">
              <legend>{t.geofences.kind}</legend>
              {(['polygon', 'circle', 'line'] as const).map((kind) => (
                <label key={kind} className="check">
                  <input type="radio" name="kind" checked={draft.kind === kind} onChange={() => restart({ kind })} />
                  {t.geofences[kind]}
                </label>
              ))}
            </fieldset>
            <p className="hint" role="status">
              {complete(draft) ? t.geofences.ready[draft.kind] : `${instructions} ${draft.kind === 'circle' ? '' : t.geofences.points(draft.points.length)}`}
            </p>
            {draft.kind === 'circle' && (
              <Field label={t.geofences.radius} type="number" min={1} max={1_000_000} value={draft.radius} onChange={(e) => setDraft({ ...draft, radius: Number(e.target.value) })} />
            )}
            {draft.kind === 'line' && (
              <Field label={t.geofences.lineWidth} type="number" min={1} max={100_000} value={draft.lineWidth} onChange={(e) => setDraft({ ...draft, lineWidth: Number(e.target.value) })} />
            )}
            {map && editablePath(draft) && <CornerEditor draft={draft} map={map} onChange={setDraft} />}
            <p className="hint" role="status">
              {draft.notice}
            </p>
            <div className="row wrap">
              {draft.kind !== 'circle' && !draft.finished && (
                <>
                  <button type="button" disabled={draft.points.length < (draft.kind === 'polygon' ? 3 : 2)} onClick={() => setDraft({ ...draft, finished: true })}>
                    {t.geofences.finish}
                  </button>
                  <button type="button" disabled={draft.points.length === 0} onClick={() => setDraft({ ...draft, points: draft.points.slice(0, -1) })}>
                    {t.geofences.undo}
                  </button>
                </>
              )}
              {!draft.finished && map && !(draft.kind === 'circle' && draft.points.length > 0) && (
                <button type="button" onClick={() => addPoint(map.getCenter().toArray() as LngLat)}>
                  {t.geofences.addCentre}
                </button>
              )}
              {draft.kind === 'circle' && draft.points.length > 0 && map && (
                <button type="button" onClick={() => setDraft({ ...draft, points: [map.getCenter().toArray() as LngLat], notice: t.geofences.moved(t.geofences.centre) })}>
                  {t.geofences.moveCentre}
                </button>
              )}
              <button type="button" onClick={() => restart({})}>
                {t.geofences.redraw}
              </button>
            </div>
            <ErrorNote error={save.error} />
            <div className="row">
              <button type="submit" className="primary" disabled={!complete(draft) || save.isPending}>
                {draft.id === undefined ? t.geofences.create : t.geofences.saveChanges}
              </button>
              <button type="button" onClick={() => { setDraft(undefined); save.reset(); }}>
                {t.cancel}
              </button>
            </div>
          </form>
        )}
      </aside>
      <MapView label={t.geofences.title} onLoad={onLoad} />
    </div>
  );
}
