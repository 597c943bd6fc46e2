import type { RouteAccessTable } from '../../platform/http/access.ts';

/** Every route of the billing module and who may call it (docs/architecture.md, "Route access"). */
export const billingRouteAccess = {
  'GET /health': 'public',
  // Webhooks carry the provider's signature, not our tokens.
  'POST /webhooks/stripe': 'public',
  'POST /webhooks/apple': 'public',
  'POST /webhooks/google': 'public',

  // The bearer's own user id; any id for administrators and services (routes.ts).
  'GET /api/subscriptions/:user_id': 'user',
  'GET /api/subscriptions/check/:user_id': 'user',
  'POST /api/subscriptions/google/purchases': 'user',

  'GET /api/subscriptions/by-provider/:provider/:subscription_id': 'admin',
  'PUT /api/subscriptions/:user_id/plan': 'admin',
  'DELETE /api/subscriptions/:user_id/plan': 'admin',

  // The remote entitlement of processes without billing (remote-entitlement.ts).
  'GET /api/subscriptions/internal/entitlement/:user_id': 'service',
} as const satisfies RouteAccessTable;
