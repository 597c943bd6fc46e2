import type { RouteAccessTable } from '../../platform/http/access.ts';

/** Every route of the devices module and who may call it (docs/architecture.md, "Route access"). */
export const devicesRouteAccess = {
  'GET /api/devices/health': 'public',
  'POST /api/devices/validate-token': 'public',

  'GET /api/devices': 'user',
  'POST /api/devices': 'user',
  'POST /api/devices/claim': 'user',
  'GET /api/devices/:id': 'user',
  'PUT /api/devices/:id': 'user',
  'DELETE /api/devices/:id': 'user',
  'POST /api/devices/:id/shares': 'user',
  'GET /api/devices/:id/shares': 'user',
  'PUT /api/devices/:id/shares/:userId': 'user',
  'DELETE /api/devices/:id/shares/:userId': 'user',
  'DELETE /api/devices/:id/shares': 'user',

  'POST /api/devices/claim-tokens': 'admin',
  'GET /api/devices/claim-tokens': 'admin',
  'GET /api/devices/claim-tokens/:token': 'admin',
  'PUT /api/devices/claim-tokens/:token': 'admin',
  'DELETE /api/devices/claim-tokens/:token': 'admin',

  'GET /api/devices/internal/access/:userId': 'service',
  'POST /api/devices/internal/devices/by-id': 'service',
  'POST /api/devices/internal/devices/by-unique-id': 'service',
  'POST /api/devices/internal/views': 'service',
  'PUT /api/devices/internal/statuses': 'service',
  'GET /api/devices/internal/usage/:userId': 'service',
} as const satisfies RouteAccessTable;
