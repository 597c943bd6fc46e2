import type { RouteAccessTable } from '../../platform/http/access.ts';

/** Every route of the notifications module and who may call it (docs/architecture.md, "Route access"). */
export const notificationsRouteAccess = {
  'GET /api/notifications/health': 'public',
  'GET /api/notifications/internal/usage/:userId': 'service',

  'GET /api/notifications': 'user',
  'POST /api/notifications': 'user',
  'GET /api/notifications/types': 'user',
  'GET /api/notifications/channels': 'user',
  'POST /api/notifications/test': 'user',
  'GET /api/notifications/targets': 'user',
  'GET /api/notifications/targets/webpush-key': 'user',
  'POST /api/notifications/targets': 'user',
  'DELETE /api/notifications/targets/:id': 'user',
  'GET /api/notifications/deliveries': 'user',
  'POST /api/notifications/deliveries/:id/retry': 'user',
  'GET /api/notifications/:id': 'user',
  'PUT /api/notifications/:id': 'user',
  'DELETE /api/notifications/:id': 'user',
} as const satisfies RouteAccessTable;
