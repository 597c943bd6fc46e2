import { Readable } from 'node:stream';
import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { requireIdentity } from '../../../platform/http/identity.ts';
import { PositionDeleteQuery, PositionQuery, PositionSchema } from '../schemas.ts';
import { MEDIA_TYPES, csvDocument, downloadName, gpxDocument, jsonDocument, positionsJson, preferredFormat } from './formats.ts';
import type { PositionService } from './service.ts';
import { errorResponses } from '../../../platform/http/schemas.ts';

const TAGS = ['positions'];
const JSON_TYPE = `${MEDIA_TYPES.json}; charset=utf-8`;

export function registerPositionRoutes(app: HttpApp, positions: PositionService): void {
  app.get(
    '/api/positions',
    {
      schema: {
        tags: TAGS,
        summary: 'Latest positions of every visible device, the latest of one device (deviceId), or its history (deviceId, from, to)',
        description:
          'A history is ordered by fixTime ascending, bounds inclusive, at most 100 000 positions (else 400 RANGE_TOO_LARGE), ' +
          'and streamed; it is also served as GPX (Accept: application/gpx+xml) or CSV (Accept: text/csv).',
        querystring: PositionQuery,
        response: {
          200: {
            description: 'Positions',
            content: {
              'application/json': { schema: Type.Array(PositionSchema) },
              'application/gpx+xml': { schema: Type.String({ description: 'GPX 1.1, one track (histories only)' }) },
              'text/csv': { schema: Type.String({ description: 'CSV with a header row (histories only)' }) },
            },
          },
          ...errorResponses(400, 401, 403, 404, 502),
        },
      },
    },
    async (request, reply) => {
      const { deviceId, id, from, to } = request.query;
      const answer = await positions.query(requireIdentity(request).userId, request, { deviceId, ids: id, from, to });
      if (answer.kind === 'list') return reply.type(JSON_TYPE).send(positionsJson(answer.rows));

      const format = preferredFormat(request.headers.accept);
      const pages = positions.historyPages(answer);
      const body =
        format === 'gpx' ? gpxDocument(pages, await positions.trackName(answer.deviceId)) : format === 'csv' ? csvDocument(pages) : jsonDocument(pages);
      reply.header('vary', 'Accept').type(`${MEDIA_TYPES[format]}; charset=utf-8`);
      if (format !== 'json') reply.header('content-disposition', `attachment; filename="${downloadName(answer.deviceId, format)}"`);
      // One page in flight at a time: memory stays bounded by the page size, whatever the history's length.
      // Fastify pipes a stream as it is (the schema above documents what it carries), hence the cast.
      return reply.send(Readable.from(body, { highWaterMark: 1 }) as never);
    },
  );

  app.delete(
    '/api/positions',
    {
      schema: {
        tags: TAGS,
        summary: "Delete a device's positions in a range (owner or administrator; bounds inclusive)",
        querystring: PositionDeleteQuery,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 502) },
      },
    },
    async (request, reply) => {
      const { deviceId, from, to } = request.query;
      await positions.delete(requireIdentity(request).userId, request, deviceId, from, to);
      return reply.code(204).send(null);
    },
  );
}
