import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import type { FormEvent } from 'react';
import type { GeoJSONSource, Map as MapLibreMap, MapMouseEvent } from 'maplibre-gl';
import type { Geofence } from '../../../src/client/index.ts';
import { api } from '../api.ts';
import { t } from '../i18n.ts';
import { distance, featureCollection, fromWkt, shapeFeature, toWkt } from '../map/geo.ts';
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
}

const NEW_DRAFT: Draft = { id: undefined, name: '', description: '', kind: 'polygon', points: [], radius: 100, lineWidth: 25, finished: false };

function draftShape(draft: Draft): Shape | undefined {
  if (draft.kind === 'circle') return draft.points[0] ? { kind: 'circle', center: draft.points[0], radius: draft.radius } : undefined;
  return draft.points.length > 0 ? { kind: draft.kind, points: draft.points } : undefined;
}

function complete(draft: Draft): boolean {
  if (draft.kind === 'circle') return draft.points.length === 1 && draft.radius > 0;
  return draft.finished && draft.points.length >= (draft.kind === 'polygon' ? 3 : 2);
}

function draftOf(geofence: Geofence): Draft {
  const shape = fromWkt(geofence.area);
  const lineWidth = Number(geofence.attributes.polylineDistance ?? 25);
  const base = { ...NEW_DRAFT, id: geofence.id, name: geofence.name, description: geofence.description ?? '', lineWidth, finished: true };
  if (!shape) return base;
  return shape.kind === 'circle' ? { ...base, kind: 'circle', points: [shape.center], radius: shape.radius } : { ...base, kind: shape.kind, points: shape.points };
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
    const vertices = (draft?.points ?? []).map((point) => ({ type: 'Feature' as const, properties: {}, geometry: { type: 'Point' as const, coordinates: point } }));
    (map.getSource('draft') as GeoJSONSource).setData(featureCollection([...(shape ? [shapeFeature(shape)] : []), ...vertices]));
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

  /** A click on the map, or the map's centre for keyboard users: a corner, a route point, or a circle's centre then its edge. */
  const addPoint = (point: LngLat) => {
    const current = drafting.current;
    if (!current) return;
    if (current.kind === 'circle') {
      const center = current.points[0];
      if (center && !current.finished) setDraft({ ...current, radius: Math.max(1, Math.round(distance(center, point))), finished: true });
      else setDraft({ ...current, points: [point], finished: false });
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
    loaded.addLayer({ id: 'draft-vertices', type: 'circle', source: 'draft', filter: ['==', '$type', 'Point'], paint: { 'circle-color': '#d93025', 'circle-radius': 5, 'circle-stroke-color': '#fff', 'circle-stroke-width': 2 } });
    loaded.on('click', (event: MapMouseEvent) => addPoint([event.lngLat.lng, event.lngLat.lat]));
    setMap(loaded);
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (draft && complete(draft)) save.mutate(draft);
  };
  const instructions = draft && { circle: t.geofences.drawCircle, polygon: t.geofences.drawPolygon, line: t.geofences.drawLine }[draft.kind];

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
                    <button type="button" className="link" aria-label={`${t.edit} ${geofence.name}`} onClick={() => setDraft(draftOf(geofence))}>
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
                  <input type="radio" name="kind" checked={draft.kind === kind} onChange={() => setDraft({ ...draft, kind, points: [], finished: false })} />
                  {t.geofences[kind]}
                </label>
              ))}
            </fieldset>
            <p className="hint" role="status">
              {complete(draft) ? t.geofences.ready : `${instructions} ${draft.kind === 'circle' ? '' : t.geofences.points(draft.points.length)}`}
            </p>
            {draft.kind === 'circle' && (
              <Field label={t.geofences.radius} type="number" min={1} max={1_000_000} value={draft.radius} onChange={(e) => setDraft({ ...draft, radius: Number(e.target.value) })} />
            )}
            {draft.kind === 'line' && (
              <Field label={t.geofences.lineWidth} type="number" min={1} max={100_000} value={draft.lineWidth} onChange={(e) => setDraft({ ...draft, lineWidth: Number(e.target.value) })} />
            )}
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
              <button type="button" onClick={() => setDraft({ ...draft, points: [], finished: false })}>
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
