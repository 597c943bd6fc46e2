import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Geofence } from '../../src/client/index.ts';
import { t } from '../../web/src/i18n.ts';
import { fromWkt } from '../../web/src/map/geo.ts';
import type { LngLat } from '../../web/src/map/geo.ts';
import {
  addPoint,
  closes,
  complete,
  deleteVertex,
  draftOf,
  draftShape,
  editablePath,
  endDrag,
  geofenceRequest,
  handles,
  insertVertex,
  moveVertex,
  NEW_DRAFT,
  restart,
} from '../../web/src/screens/geofence-draft.ts';
import type { Draft } from '../../web/src/screens/geofence-draft.ts';

const A: LngLat = [2, 48];
const B: LngLat = [2.01, 48];
const C: LngLat = [2.01, 48.01];
const D: LngLat = [2, 48.01];

const drawn = (kind: Draft['kind'], points: LngLat[], finished = true): Draft => ({ ...NEW_DRAFT, name: ' Depot ', kind, points, finished });

describe('geofence draft: drawing', () => {
  it('adds a corner per click until the shape is finished, then ignores clicks', () => {
    let draft = NEW_DRAFT;
    for (const point of [A, B, C]) draft = addPoint(draft, point);
    assert.deepEqual(draft.points, [A, B, C]);
    assert.equal(complete(draft), false, 'a polygon is complete only once finished');
    draft = { ...draft, finished: true };
    assert.equal(complete(draft), true);
    assert.deepEqual(addPoint(draft, D), draft, 'a stray click never changes a finished shape');
  });

  it('takes a circle from its centre then its edge, the radius in whole metres and never 0', () => {
    let circle = addPoint({ ...NEW_DRAFT, kind: 'circle' }, A);
    assert.deepEqual(circle.points, [A]);
    assert.equal(circle.finished, false);
    circle = addPoint(circle, [2, 48.001]);
    assert.equal(circle.finished, true);
    assert.equal(circle.radius, 111, 'a thousandth of a degree of latitude');
    assert.deepEqual(addPoint(circle, D), circle);
    assert.equal(addPoint(addPoint({ ...NEW_DRAFT, kind: 'circle' }, A), A).radius, 1);
    assert.equal(complete(circle), true);
  });

  it('needs three corners for a polygon and two points for a route', () => {
    assert.equal(complete(drawn('polygon', [A, B])), false);
    assert.equal(complete(drawn('line', [A, B])), true);
    assert.equal(complete(drawn('line', [A])), false);
    assert.equal(draftShape(drawn('polygon', [])), undefined);
    assert.equal(draftShape({ ...NEW_DRAFT, kind: 'circle' }), undefined);
  });

  it('closes a polygon being drawn at its first corner once it has three', () => {
    assert.equal(closes(drawn('polygon', [A, B], false), 0), false);
    assert.equal(closes(drawn('polygon', [A, B, C], false), 0), true);
    assert.equal(closes(drawn('polygon', [A, B, C], false), 1), false);
    assert.equal(closes(drawn('polygon', [A, B, C], true), 0), false);
    assert.equal(closes(drawn('line', [A, B, C], false), 0), false);
    assert.equal(endDrag(drawn('polygon', [A, B, C], false), 0, false, false).finished, true, 'a press on the first corner');
  });

  it('starts again from nothing, keeping the name and taking the changes', () => {
    const again = restart({ ...drawn('polygon', [A, B, C]), selected: 2, notice: 'x' }, { kind: 'line' });
    assert.deepEqual({ kind: again.kind, points: again.points, finished: again.finished, selected: again.selected, notice: again.notice, name: again.name }, { kind: 'line', points: [], finished: false, selected: 0, notice: '', name: ' Depot ' });
  });
});

describe('geofence draft: editing corners', () => {
  const square = drawn('polygon', [A, B, C, D]);

  it('moves one corner and leaves the others', () => {
    assert.deepEqual(moveVertex(square, 2, [3, 49]).points, [A, B, [3, 49], D]);
  });

  it('inserts a corner halfway along an edge, the last edge of a polygon closing the ring, and chooses it', () => {
    const inserted = insertVertex(square, 3);
    assert.deepEqual(inserted.points, [A, B, C, D, [(D[0] + A[0]) / 2, (D[1] + A[1]) / 2]]);
    assert.equal(inserted.selected, 4);
    assert.equal(inserted.notice, t.geofences.inserted(t.geofences.vertex.polygon(5)));
    assert.deepEqual(insertVertex(drawn('line', [A, B]), 0).points, [A, [(A[0] + B[0]) / 2, 48], B]);
  });

  it('deletes a corner and chooses its neighbour, the last one when the last is deleted', () => {
    const deleted = deleteVertex({ ...square, selected: 3 }, 3);
    assert.deepEqual(deleted.points, [A, B, C]);
    assert.equal(deleted.selected, 2);
    assert.equal(deleted.notice, t.geofences.deleted(t.geofences.vertex.polygon(4)));
    assert.equal(deleteVertex(square, 1).selected, 1);
  });

  it('after a drag chooses the moved corner and says so; a press without a move only chooses it', () => {
    const dragged = endDrag(square, 2, true, false);
    assert.equal(dragged.selected, 2);
    assert.equal(dragged.notice, t.geofences.moved(t.geofences.vertex.polygon(3)));
    assert.equal(endDrag(square, 2, true, true).notice, t.geofences.inserted(t.geofences.vertex.polygon(3)));
    const pressed = endDrag(square, 1, false, false);
    assert.equal(pressed.selected, 1);
    assert.equal(pressed.notice, '');
  });

  it('draws corners as handles, and on a finished shape a midpoint on each edge: four for a square, two for a three-point route', () => {
    const roles = (draft: Draft) => handles(draft).map((feature) => `${feature.properties?.role}${feature.properties?.index}`);
    assert.deepEqual(roles({ ...square, finished: false }), ['vertex0', 'vertex1', 'vertex2', 'vertex3']);
    assert.deepEqual(roles(square), ['midpoint0', 'midpoint1', 'midpoint2', 'midpoint3', 'vertex0', 'vertex1', 'vertex2', 'vertex3']);
    assert.deepEqual(roles(drawn('line', [A, B, C])), ['midpoint0', 'midpoint1', 'vertex0', 'vertex1', 'vertex2']);
    assert.equal(handles({ ...square, selected: 2 }).filter((feature) => feature.properties?.selected).length, 1);
    assert.equal(editablePath({ ...NEW_DRAFT, kind: 'circle', points: [A] }), false, 'a circle has a centre, no corners');
  });
});

describe('geofence draft: to and from the API', () => {
  const geofence = (area: string, attributes: Record<string, unknown> = {}): Geofence => ({ id: 7, name: 'Yard', description: null, area, calendarId: null, attributes });

  it('opens a saved polygon, circle and route for editing, finished', () => {
    const polygon = draftOf(geofence('POLYGON ((48 2, 48 2.01, 48.01 2.01, 48 2))'));
    assert.deepEqual({ id: polygon.id, kind: polygon.kind, points: polygon.points, finished: polygon.finished, description: polygon.description }, { id: 7, kind: 'polygon', points: [A, B, C], finished: true, description: '' });
    const circle = draftOf(geofence('CIRCLE (48 2, 250)'));
    assert.deepEqual({ kind: circle.kind, points: circle.points, radius: circle.radius }, { kind: 'circle', points: [A], radius: 250 });
    const route = draftOf(geofence('LINESTRING (48 2, 48 2.01)', { polylineDistance: 40 }));
    assert.deepEqual({ kind: route.kind, lineWidth: route.lineWidth }, { kind: 'line', lineWidth: 40 });
    assert.equal(draftOf(geofence('POINT (1 2)')).points.length, 0, 'an area the editor cannot draw opens empty');
  });

  it('saves trimmed words, the area as WKT and a route its width', () => {
    assert.deepEqual(geofenceRequest(drawn('polygon', [A, B, C])), { name: 'Depot', description: null, area: 'POLYGON ((48 2, 48 2.01, 48.01 2.01, 48 2))' });
    const route = geofenceRequest({ ...drawn('line', [A, B]), description: ' gate ', lineWidth: 30 });
    assert.deepEqual(route, { name: 'Depot', description: 'gate', area: 'LINESTRING (48 2, 48 2.01)', attributes: { polylineDistance: 30 } });
    assert.deepEqual(fromWkt(geofenceRequest({ ...drawn('circle', [A]), radius: 99.6 }).area), { kind: 'circle', center: A, radius: 100 });
  });
});
