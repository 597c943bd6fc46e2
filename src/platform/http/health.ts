import { Type } from 'typebox';
import type { ServiceName } from '../../config.ts';
import type { Database } from '../db/database.ts';
import type { HttpApp } from './app.ts';

export const HealthResponse = Type.Object({
  status: Type.Union([Type.Literal('healthy'), Type.Literal('degraded')]),
  service: Type.String(),
  ready: Type.Boolean(),
  database: Type.Union([Type.Literal('connected'), Type.Literal('disconnected')]),
});

/** The modules with a spec HealthResponse: where each answers it and the `service` it names (billing's `/health` has its own shape). */
export const HEALTH_ROUTES = {
  auth: { url: '/api/auth/health', service: 'auth' },
  devices: { url: '/api/devices/health', service: 'device' },
  tracking: { url: '/api/tracking/health', service: 'tracking' },
  notifications: { url: '/api/notifications/health', service: 'notifications' },
} as const satisfies Partial<Record<ServiceName, { url: string; service: string }>>;

/** The health endpoint of the auth, device, tracking and notifications modules (spec HealthResponse). */
export function registerHealthRoute(app: HttpApp, module: keyof typeof HEALTH_ROUTES, database: Database): void {
  const { url, service } = HEALTH_ROUTES[module];
  app.get(
    url,
    { schema: { tags: [module], summary: `Health of the ${service} service`, response: { 200: HealthResponse } } },
    async () => {
      const connected = await database.ping();
      return {
        status: connected ? ('healthy' as const) : ('degraded' as const),
        service,
        ready: connected && app.readiness.phase === 'serving',
        database: connected ? ('connected' as const) : ('disconnected' as const),
      };
    },
  );
}
