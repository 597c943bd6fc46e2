import type { ServiceName } from '../config.ts';

/**
 * Paths anyone may call without a token (spec §5.3). A valid token on them is still honoured,
 * e.g. validate-token recognises the caller's own claim.
 */
const PUBLIC_PATHS = new Set([
  '/api/auth/login',
  '/api/auth/register',
  '/api/auth/verify',
  '/api/auth/verify-code',
  '/api/auth/resend-verification',
  '/api/auth/refresh',
  '/api/auth/2fa/login',
  '/api/auth/2fa/email/resend',
  '/api/auth/validate',
  '/api/auth/health',
  '/api/auth/.well-known/jwks.json',
  '/api/legal/terms',
  '/api/legal/privacy',
  '/api/devices/validate-token',
  '/api/devices/health',
  '/api/tracking/health',
  '/health',
  '/openapi.json',
  '/metrics',
]);
const PUBLIC_TREES = ['/api/auth/openid/', '/api/auth/password/', '/webhooks/', '/docs/'];
const PUBLIC_TREE_ROOTS = new Set(['/docs']);

/** Which service owns a path, by prefix (matched whole segments at a time). */
const OWNERS: [prefix: string, service: ServiceName][] = [
  ['/api/auth', 'auth'],
  ['/api/legal', 'auth'],
  ['/api/devices', 'devices'],
  ['/api/positions', 'tracking'],
  ['/api/events', 'tracking'],
  ['/api/geofences', 'tracking'],
  ['/api/tracking', 'tracking'],
  ['/api/socket', 'tracking'],
  ['/api/subscriptions', 'billing'],
  ['/webhooks', 'billing'],
  ['/health', 'billing'],
];

export function pathOf(url: string): string {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

export function isPublicPath(path: string): boolean {
  return PUBLIC_PATHS.has(path) || PUBLIC_TREE_ROOTS.has(path) || PUBLIC_TREES.some((tree) => path.startsWith(tree));
}

/** Service-to-service endpoints are never reachable through the gateway. */
export function isInternalPath(path: string): boolean {
  return /^\/api\/[^/]+\/internal(\/|$)/.test(path);
}

export function ownerOf(path: string): ServiceName | undefined {
  return OWNERS.find(([prefix]) => path === prefix || path.startsWith(`${prefix}/`))?.[1];
}
