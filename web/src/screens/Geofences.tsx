import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useMemo, useState } from 'react';
import type { FormEvent } from 'react';
import type { Map as MapLibreMap } from 'maplibre-gl';
import type { Geofence } from '../../../src/client/index.ts';
import { api } from '../api.ts';
import { t } from '../i18n.ts';
import { useLive } from '../live.ts';
import { fromWkt, shapeBounds, shapeFeature } from '../map/geo.ts';
import type { LngLat } from '../map/geo.ts';
import { FitToPoints } from '../map/layers/FitToPoints.tsx';
import { GeofenceAreas } from '../map/layers/GeofenceAreas.tsx';
import { GeofenceDraft } from '../map/layers/GeofenceDraft.tsx';
import { PointMarkers } from '../map/layers/PointMarkers.tsx';
import { MapView, useSharedMap } from '../map/MapView.tsx';
import { queryKeys } from '../queryKeys.ts';
import { ErrorNote, Field, Loading } from '../ui.tsx';
import { addPoint, complete, deleteVertex, draftOf, draftShape, editablePath, geofenceRequest, insertVertex, MINIMUM_POINTS, moveVertex, NEW_DRAFT, restart, vertexName } from './geofence-draft.ts';
import type { Draft, PathKind } from './geofence-draft.ts';

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
  const geofences = useQuery({ queryKey: queryKeys.geofences, queryFn: () => api.geofences() });
  const live = useLive();
  const [draft, setDraft] = useState<Draft | undefined>();
  const [chosen, setChosen] = useState<number | undefined>();
  const map = useSharedMap().shared?.map;

  const refresh = () => void queryClient.invalidateQueries({ queryKey: queryKeys.geofences });
  const save = useMutation({
    mutationFn: (value: Draft) => (value.id === undefined ? api.createGeofence(geofenceRequest(value)) : api.updateGeofence(value.id, geofenceRequest(value))),
    onSuccess: () => {
      setDraft(undefined);
      refresh();
    },
  });
  const remove = useMutation({ mutationFn: (id: number) => api.deleteGeofence(id), onSuccess: refresh });

  // The one being edited is drawn as the draft instead.
  const editing = draft?.id;
  const saved = useMemo(
    () =>
      (geofences.data ?? []).flatMap((geofence) => {
        if (geofence.id === editing) return [];
        const shape = fromWkt(geofence.area);
        return shape ? [shapeFeature(shape, { id: geofence.id, name: geofence.name, selected: geofence.id === chosen })] : [];
      }),
    [geofences.data, editing, chosen],
  );

  // The devices where they are, so the user sees what an area will catch.
  const devicesAt = useMemo(() => [...live.positions.values()].map((position): LngLat => [position.longitude, position.latitude]), [live.positions]);
  const latest = useQuery({ queryKey: queryKeys.latestPositions(), queryFn: async () => { const positions = await api.latestPositions(); live.seed(positions); return positions; } });
  /**
   * Until the geofences and the devices are in, the map takes no clicks: it is about to move to them,
   * and a corner clicked before would land elsewhere than meant.
   */
  const settling = geofences.isPending || latest.isPending;
  // The map opens on the saved shapes, or on the devices when there is none.
  const openOn = useMemo<LngLat[]>(() => {
    if (settling) return [];
    const shapes = (geofences.data ?? []).flatMap((geofence) => {
      const shape = fromWkt(geofence.area);
      return shape ? shapeBounds(shape) : [];
    });
    return shapes.length > 0 ? shapes : devicesAt;
  }, [settling, geofences.data, devicesAt]);

  /** The map shows all of a shape. */
  const fit = (shape: ReturnType<typeof fromWkt>) => {
    if (map && shape) map.fitBounds(shapeBounds(shape), { padding: 48, maxZoom: 17, duration: 0 });
  };
  /** Editing a saved geofence: the map shows all of it. */
  const edit = (geofence: Geofence) => {
    const next = draftOf(geofence);
    setDraft(next);
    fit(draftShape(next));
  };
  /** A name in the list: its shape is marked on the map, which fits it. */
  const choose = (geofence: Geofence) => {
    setChosen(geofence.id);
    fit(fromWkt(geofence.area));
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (draft && complete(draft)) save.mutate(draft);
  };
  const instructions = draft && { circle: t.geofences.drawCircle, polygon: t.geofences.drawPolygon, line: t.geofences.drawLine }[draft.kind];
  const restartDraft = (changes: Partial<Draft>) => draft && setDraft(restart(draft, changes));

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
                  <button type="button" className="link geofence-name" aria-pressed={geofence.id === chosen} aria-label={t.geofences.show(geofence.name)} onClick={() => choose(geofence)}>
                    {geofence.name}
                  </button>
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
                  <input type="radio" name="kind" checked={draft.kind === kind} onChange={() => restartDraft({ kind })} />
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
                <button type="button" onClick={() => setDraft(addPoint(draft, map.getCenter().toArray() as LngLat))}>
                  {t.geofences.addCentre}
                </button>
              )}
              {draft.kind === 'circle' && draft.points.length > 0 && map && (
                <button type="button" onClick={() => setDraft({ ...draft, points: [map.getCenter().toArray() as LngLat], notice: t.geofences.moved(t.geofences.centre) })}>
                  {t.geofences.moveCentre}
                </button>
              )}
              <button type="button" onClick={() => restartDraft({})}>
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
      <MapView label={t.geofences.title} busy={settling}>
        <GeofenceAreas features={saved} />
        <PointMarkers points={devicesAt} color="#1d6fd8" radius={6} />
        <GeofenceDraft draft={draft} onChange={setDraft} />
        <FitToPoints points={openOn} once maxZoom={14} padding={48} />
      </MapView>
    </div>
  );
}
