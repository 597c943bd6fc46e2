import type { RouteAccessTable } from '../../platform/http/access.ts';

/** Every route of the tracking module and who may call it (docs/architecture.md, "Route access"). */
export const trackingRouteAccess = {
  'GET /api/tracking/health': 'public',

  'GET /api/positions': 'user',
  'DELETE /api/positions': 'user',
  'GET /api/events': 'user',
  'GET /api/events/:id': 'user',
  'GET /api/geofences': 'user',
  'POST /api/geofences': 'user',
  'GET /api/geofences/:id': 'user',
  'PUT /api/geofences/:id': 'user',
  'DELETE /api/geofences/:id': 'user',
  'GET /api/socket': 'user',
} as const satisfies RouteAccessTable;
