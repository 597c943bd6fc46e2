import { Type } from 'typebox';
import type { RouteAccessTable } from '../http/access.ts';
import type { HttpApp } from '../http/app.ts';
import { DecimalInteger, errorResponses, IdParam, Nullable } from '../http/schemas.ts';
import type { DeadLetterService } from './dead-letter-service.ts';
import { PAYLOAD_SUMMARY_CHARS } from './dead-letter-service.ts';

/** The dead-letter routes and who may call them; the module hosting them adds them to its route table. */
export const deadLetterRouteAccess = {
  'GET /api/admin/dead-letters': 'admin',
  'POST /api/admin/dead-letters/:id/retry': 'admin',
} as const satisfies RouteAccessTable;

const TAGS = ['administration'];
const Name = Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z][a-z0-9.-]*$' });

const DeadLetter = Type.Object({
  id: Type.Integer(),
  queue: Type.String({ description: 'The queue the work came from: `outbox` (facts between modules)' }),
  consumer: Type.String({ description: 'Who failed to handle it: for the outbox, the consuming module' }),
  topic: Type.String({ description: 'What kind of work: for the outbox, the fact’s topic' }),
  payload: Type.String({ description: `The work's payload (JSON text), its first ${PAYLOAD_SUMMARY_CHARS} characters` }),
  payloadTruncated: Type.Boolean(),
  attempts: Type.Integer(),
  lastError: Nullable(Type.String()),
  createdAt: Type.String({ format: 'date-time', description: 'When the work was queued' }),
  failedAt: Type.String({ format: 'date-time', description: 'When it passed the attempt cap' }),
  retryRequestedAt: Nullable(Type.String({ format: 'date-time', description: 'A retry asked for and not yet carried out' })),
});

export function registerDeadLetterRoutes(app: HttpApp, deadLetters: DeadLetterService): void {
  app.get(
    '/api/admin/dead-letters',
    {
      schema: {
        tags: TAGS,
        summary: 'Durable work that failed past its attempt cap, newest first, a page at a time (administrators)',
        description: '403 FORBIDDEN for non-administrators.',
        querystring: Type.Object({
          queue: Type.Optional(Name),
          consumer: Type.Optional(Name),
          page: DecimalInteger({ minimum: 1, maximum: 1_000_000 }, { default: 1 }),
          limit: DecimalInteger({ minimum: 1, maximum: 100 }, { default: 50 }),
        }),
        response: {
          200: Type.Object({ deadLetters: Type.Array(DeadLetter), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }),
          ...errorResponses(400, 401, 403),
        },
      },
    },
    async (request) => deadLetters.list(request.query),
  );

  app.post(
    '/api/admin/dead-letters/:id/retry',
    {
      schema: {
        tags: TAGS,
        summary: 'Queue a dead letter again, attempts from zero (administrators)',
        description:
          'Answers 202 with the letter, its retry requested: the process running its consumer puts it back in its queue at once where the hint reaches it, within a second otherwise, and the letter leaves the list. Asking again before then changes nothing. 403 FORBIDDEN; 404 DEAD_LETTER_NOT_FOUND.',
        params: Type.Object({ id: IdParam }),
        response: { 202: DeadLetter, ...errorResponses(401, 403, 404) },
      },
    },
    async (request, reply) => reply.code(202).send(await deadLetters.retry(request.params.id)),
  );
}
