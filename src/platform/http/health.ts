import { Type } from 'typebox';
import type { Database } from '../db/database.ts';
import type { HttpApp } from './app.ts';

export const HealthResponse = Type.Object({
  status: Type.Union([Type.Literal('healthy'), Type.Literal('degraded')]),
  service: Type.String(),
  ready: Type.Boolean(),
  database: Type.Union([Type.Literal('connected'), Type.Literal('disconnected')]),
});

/** The health endpoint of the auth, device and tracking services (spec HealthResponse). */
export function registerHealthRoute(app: HttpApp, url: string, service: string, database: Database, tag: string): void {
  app.get(
    url,
    { schema: { tags: [tag], summary: `Health of the ${service} service`, response: { 200: HealthResponse } } },
    async () => {
      const connected = await database.ping();
      return {
        status: connected ? ('healthy' as const) : ('degraded' as const),
        service,
        ready: connected,
        database: connected ? ('connected' as const) : ('disconnected' as const),
      };
    },
  );
}
