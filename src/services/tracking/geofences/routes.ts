import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { requireIdentity } from '../../../platform/http/identity.ts';
import { GeofenceCreateRequest, GeofenceListQuery, GeofenceSchema, GeofenceUpdateRequest, IdParams } from '../schemas.ts';
import type { GeofenceService } from './service.ts';
import { errorResponses } from '../../../platform/http/schemas.ts';

const TAGS = ['geofences'];

export function registerGeofenceRoutes(app: HttpApp, geofences: GeofenceService): void {
  app.get(
    '/api/geofences',
    {
      schema: {
        tags: TAGS,
        summary: "The caller's geofences (administrators: of any user with userId; all: every one the user may see)",
        querystring: GeofenceListQuery,
        response: { 200: Type.Array(GeofenceSchema), ...errorResponses(400, 401, 403, 502) },
      },
    },
    async (request) => {
      const { userId, all } = request.query;
      return geofences.list(requireIdentity(request).userId, request, { userId, all: all === 'true' || all === '1' });
    },
  );

  app.post(
    '/api/geofences',
    {
      schema: {
        tags: TAGS,
        summary: 'Create a geofence (it applies to every device the caller owns)',
        body: GeofenceCreateRequest,
        response: { 201: GeofenceSchema, ...errorResponses(400, 401, 403, 502) },
      },
    },
    async (request, reply) => {
      const geofence = await geofences.create(requireIdentity(request).userId, request.body);
      return reply.code(201).send(geofence);
    },
  );

  app.get(
    '/api/geofences/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'One geofence',
        params: IdParams,
        response: { 200: GeofenceSchema, ...errorResponses(400, 401, 403, 404, 502) },
      },
    },
    async (request) => geofences.get(requireIdentity(request).userId, request, request.params.id),
  );

  app.put(
    '/api/geofences/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Change a geofence (owner or administrator); fields left out keep their value',
        params: IdParams,
        body: GeofenceUpdateRequest,
        response: { 200: GeofenceSchema, ...errorResponses(400, 401, 403, 404, 502) },
      },
    },
    async (request) => geofences.update(requireIdentity(request).userId, request, request.params.id, request.body),
  );

  app.delete(
    '/api/geofences/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Delete a geofence (owner or administrator)',
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 502) },
      },
    },
    async (request, reply) => {
      await geofences.delete(requireIdentity(request).userId, request, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
