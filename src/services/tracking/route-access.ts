import type { RouteAccessTable } from '../../platform/http/access.ts';

/** Every route of the tracking module and who may call it (docs/architecture.md, "Route access"). */
export const trackingRouteAccess = {
  'GET /api/tracking/health': 'public',
  'GET /api/tracking/internal/usage/:userId': 'service',

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
  'GET /api/reports/trips': 'user',
  'GET /api/reports/stops': 'user',
  'GET /api/reports/summary': 'user',
  'GET /api/reports/route': 'user',
  'GET /api/reports/events': 'user',
  'GET /api/reports/geofences': 'user',
  'GET /api/commands/types': 'user',
  'POST /api/commands/send': 'user',
  'GET /api/commands/history': 'user',
  'GET /api/commands': 'user',
  'POST /api/commands': 'user',
  'GET /api/commands/:id': 'user',
  'PUT /api/commands/:id': 'user',
  'DELETE /api/commands/:id': 'user',
} as const satisfies RouteAccessTable;
