import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { requireIdentity } from '../../../platform/http/identity.ts';
import { EventQuery, EventSchema, IdParams } from '../schemas.ts';
import type { EventService } from './service.ts';
import { errorResponses } from '../../../platform/http/schemas.ts';

const TAGS = ['events'];

export function registerEventRoutes(app: HttpApp, events: EventService): void {
  app.get(
    '/api/events',
    {
      schema: {
        tags: TAGS,
        summary: 'Events of one device (deviceId) or of every visible device, ascending by eventTime, at most 1000',
        description: 'from and to are inclusive; to defaults to now and from to 24 hours before to. type is repeatable.',
        querystring: EventQuery,
        response: { 200: Type.Array(EventSchema), ...errorResponses(400, 401, 403, 404, 502) },
      },
    },
    async (request) => {
      const { deviceId, from, to, type } = request.query;
      return events.list(requireIdentity(request).userId, request, { deviceId, from, to, types: type });
    },
  );

  app.get(
    '/api/events/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'One event',
        params: IdParams,
        response: { 200: EventSchema, ...errorResponses(400, 401, 403, 404, 502) },
      },
    },
    async (request) => events.get(requireIdentity(request).userId, request, request.params.id),
  );
}
