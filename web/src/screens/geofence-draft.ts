/** The geofence being drawn or edited, and every change made to it: pure functions, tested without a browser. */
import type { Feature } from 'geojson';
import type { Geofence, GeofenceRequest } from '../../../src/client/index.ts';
import { t } from '../i18n.ts';
import { distance, fromWkt, midpoint, toWkt } from '../map/geo.ts';
import type { LngLat, Shape } from '../map/geo.ts';

export type Kind = Shape['kind'];
export type PathKind = Exclude<Kind, 'circle'>;

export interface Draft {
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

export const NEW_DRAFT: Draft = { id: undefined, name: '', description: '', kind: 'polygon', points: [], radius: 100, lineWidth: 25, finished: false, selected: 0, notice: '' };

export const MINIMUM_POINTS: Record<PathKind, number> = { polygon: 3, line: 2 };

export function draftShape(draft: Draft): Shape | undefined {
  if (draft.kind === 'circle') return draft.points[0] ? { kind: 'circle', center: draft.points[0], radius: draft.radius } : undefined;
  return draft.points.length > 0 ? { kind: draft.kind, points: draft.points } : undefined;
}

/** Whether the draft can be saved. */
export function complete(draft: Draft): boolean {
  if (draft.kind === 'circle') return draft.points.length === 1 && draft.radius > 0;
  return draft.finished && draft.points.length >= MINIMUM_POINTS[draft.kind];
}

/** A finished polygon or route: its corners can be chosen, moved, added and deleted. */
export function editablePath(draft: Draft): draft is Draft & { kind: PathKind } {
  return draft.kind !== 'circle' && complete(draft);
}

/** The name of a corner, a route point or a circle's centre, for the notices. */
export function vertexName(kind: Kind, index: number): string {
  return kind === 'circle' ? t.geofences.centre : t.geofences.vertex[kind](index + 1);
}

export function moveVertex(draft: Draft, index: number, point: LngLat): Draft {
  return { ...draft, points: draft.points.map((existing, i) => (i === index ? point : existing)) };
}

/** A new corner halfway along the edge that leaves corner `after`; a polygon's last edge closes the ring. */
export function insertVertex(draft: Draft, after: number): Draft {
  const from = draft.points[after] as LngLat;
  const to = draft.points[(after + 1) % draft.points.length] as LngLat;
  const points = [...draft.points.slice(0, after + 1), midpoint(from, to), ...draft.points.slice(after + 1)];
  return { ...draft, points, selected: after + 1, notice: t.geofences.inserted(vertexName(draft.kind, after + 1)) };
}

export function deleteVertex(draft: Draft, index: number): Draft {
  const points = draft.points.filter((_, i) => i !== index);
  return { ...draft, points, selected: Math.min(index, points.length - 1), notice: t.geofences.deleted(vertexName(draft.kind, index)) };
}

/**
 * A click on the map, or the map's centre for keyboard users: a corner, a route point, or a circle's
 * centre then its edge. A finished shape ignores clicks, so a stray one never undoes it.
 */
export function addPoint(draft: Draft, point: LngLat): Draft {
  if (draft.kind === 'circle') {
    const center = draft.points[0];
    if (!center) return { ...draft, points: [point], finished: false };
    return draft.finished ? draft : { ...draft, radius: Math.max(1, Math.round(distance(center, point))), finished: true };
  }
  return draft.finished ? draft : { ...draft, points: [...draft.points, point] };
}

/** Whether a press on corner `index` closes the polygon being drawn: its first corner, once there are enough. */
export function closes(draft: Draft, index: number): boolean {
  return draft.kind === 'polygon' && !draft.finished && index === 0 && draft.points.length >= MINIMUM_POINTS.polygon;
}

/**
 * The end of a press on a handle: after a drag, the corner moved (or was inserted) there and is
 * chosen; a press without a move chooses the corner, or closes a polygon at its first corner.
 */
export function endDrag(draft: Draft, index: number, moved: boolean, inserting: boolean): Draft {
  if (moved) return { ...draft, selected: index, notice: (inserting ? t.geofences.inserted : t.geofences.moved)(vertexName(draft.kind, index)) };
  if (closes(draft, index)) return { ...draft, finished: true };
  return { ...draft, selected: index };
}

/** The same geofence drawn again from nothing, with `changes` (a new kind, say). */
export function restart(draft: Draft, changes: Partial<Draft> = {}): Draft {
  return { ...draft, points: [], finished: false, selected: 0, notice: '', ...changes };
}

function pointFeature(point: LngLat, properties: Record<string, unknown>): Feature {
  return { type: 'Feature', properties, geometry: { type: 'Point', coordinates: point } };
}

/** The handles drawn over the draft: its corners, and on a finished shape a dot halfway along each edge to add a corner there. */
export function handles(draft: Draft): Feature[] {
  const editable = editablePath(draft);
  const vertices = draft.points.map((point, index) => pointFeature(point, { role: 'vertex', index, selected: editable && index === draft.selected }));
  if (!editable) return vertices;
  const edges = draft.kind === 'polygon' ? draft.points.length : draft.points.length - 1;
  const midpoints = Array.from({ length: edges }, (_, index) =>
    pointFeature(midpoint(draft.points[index] as LngLat, draft.points[(index + 1) % draft.points.length] as LngLat), { role: 'midpoint', index }),
  );
  return [...midpoints, ...vertices];
}

/** A saved geofence, ready to edit. */
export function draftOf(geofence: Geofence): Draft {
  const shape = fromWkt(geofence.area);
  const lineWidth = Number(geofence.attributes.polylineDistance ?? 25);
  const base = { ...NEW_DRAFT, id: geofence.id, name: geofence.name, description: geofence.description ?? '', lineWidth, finished: true };
  if (!shape) return base;
  return shape.kind === 'circle' ? { ...base, kind: 'circle', points: [shape.center], radius: shape.radius } : { ...base, kind: shape.kind, points: shape.points };
}

/** What the API stores of a complete draft: trimmed words, the area as WKT, a route's width. */
export function geofenceRequest(draft: Draft): GeofenceRequest & { name: string; area: string } {
  return {
    name: draft.name.trim(),
    description: draft.description.trim() || null,
    area: toWkt(draftShape(draft) as Shape),
    ...(draft.kind === 'line' ? { attributes: { polylineDistance: draft.lineWidth } } : {}),
  };
}
