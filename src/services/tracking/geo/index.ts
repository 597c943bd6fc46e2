export { AreaError, DEFAULT_POLYLINE_DISTANCE } from './area.ts';
export type { Area, Bounds, LatLon } from './area.ts';
export { MAX_AREA_POINTS, MAX_AREA_TEXT_LENGTH, formatArea, parseArea } from './area-text.ts';
export { EARTH_RADIUS_METERS, distanceMeters } from './sphere.ts';
export { areaBounds, areaContains, prepareArea } from './containment.ts';
export type { PreparedArea } from './containment.ts';
export { GeofenceIndex } from './geofence-index.ts';
