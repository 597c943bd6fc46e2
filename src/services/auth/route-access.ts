import type { RouteAccessTable } from '../../platform/http/access.ts';
import { deadLetterRouteAccess } from '../../platform/work/dead-letter-routes.ts';

/** Every route of the auth module and who may call it (docs/architecture.md, "Route access"). */
export const authRouteAccess = {
  'GET /api/auth/health': 'public',
  'GET /api/auth/.well-known/jwks.json': 'public',
  'POST /api/auth/login': 'public',
  'POST /api/auth/2fa/login': 'public',
  'POST /api/auth/2fa/email/resend': 'public',
  'POST /api/auth/refresh': 'public',
  // The route checks the token itself, so a reverse proxy may call the auth service directly.
  'GET /api/auth/validate': 'public',
  'POST /api/auth/register': 'public',
  'POST /api/auth/verify': 'public',
  'POST /api/auth/verify-code': 'public',
  'POST /api/auth/resend-verification': 'public',
  'POST /api/auth/password/reset': 'public',
  'POST /api/auth/password/update': 'public',
  'GET /api/auth/openid/auth': 'public',
  'GET /api/auth/openid/callback': 'public',
  'POST /api/auth/openid/callback': 'public',
  'POST /api/auth/openid/token': 'public',
  'GET /api/legal/terms': 'public',
  'GET /api/legal/privacy': 'public',

  'DELETE /api/auth/logout': 'user',
  'GET /api/auth/profile': 'user',
  'PUT /api/auth/profile': 'user',
  'POST /api/auth/change-password': 'user',
  'DELETE /api/auth/account': 'user',
  'POST /api/auth/2fa/setup': 'user',
  'POST /api/auth/2fa/verify': 'user',
  'POST /api/auth/2fa/regenerate': 'user',
  'POST /api/auth/2fa/disable': 'user',
  'POST /api/auth/2fa/email/setup': 'user',
  'POST /api/auth/2fa/email/verify': 'user',
  'POST /api/auth/2fa/email/code': 'user',
  'POST /api/legal/accept': 'user',

  'GET /api/auth/users': 'admin',
  'GET /api/auth/users/:id': 'admin',
  'PUT /api/auth/users/:id': 'admin',
  // The platform's durable work, administered with the accounts: a gateway in split mode forwards these to auth.
  ...deadLetterRouteAccess,

  'GET /api/auth/internal/revoked-sessions': 'service',
  'GET /api/auth/internal/users': 'service',
  'GET /api/auth/internal/users/:id': 'service',
} as const satisfies RouteAccessTable;
