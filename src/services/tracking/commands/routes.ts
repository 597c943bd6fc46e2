import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { requireIdentity } from '../../../platform/http/identity.ts';
import { AttributesInput, IdParam, Nullable, errorResponses } from '../../../platform/http/schemas.ts';
import { COMMAND_STATUSES } from './types.ts';
import type { CommandStatus } from './types.ts';
import type { CommandService } from './service.ts';

const TAGS = ['commands'];
const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
const IsoTime = Type.String({ format: 'date-time' });
const QueryTime = Type.String({ format: 'date-time', maxLength: 64, description: 'ISO 8601 date-time with time zone, inclusive' });
const CommandTypeName = Type.String({ minLength: 1, maxLength: 32, description: "A Traccar command type name: GET /api/commands/types lists a device's" });
const AnyObject = Type.Record(Type.String(), Type.Unknown());

const CommandSchema = Type.Object({
  id: Type.Integer(),
  deviceId: Type.Integer(),
  type: Type.String(),
  attributes: AnyObject,
  status: Type.Unsafe<CommandStatus>({ type: 'string', enum: [...COMMAND_STATUSES] }),
  createdAt: IsoTime,
  sentAt: Nullable(IsoTime),
});

const SavedCommandSchema = Type.Object({
  id: Type.Integer(),
  description: Type.String(),
  type: Type.String(),
  attributes: AnyObject,
  byAdministrator: Type.Boolean(),
  createdAt: IsoTime,
});

const SendRequest = Type.Object(
  {
    deviceId: Id,
    type: Type.Optional(CommandTypeName),
    attributes: Type.Optional(AttributesInput('What the type takes: data, frequency, index, phone, timezone (docs/commands.md)')),
    commandId: Type.Optional(Id),
  },
  { additionalProperties: false },
);

const SavedCommandRequest = Type.Object(
  {
    description: Type.String({ minLength: 1, maxLength: 128 }),
    type: CommandTypeName,
    attributes: Type.Optional(AttributesInput('What the type takes (docs/commands.md)')),
  },
  { additionalProperties: false },
);

const IdParams = Type.Object({ id: IdParam });

export function registerCommandRoutes(app: HttpApp, commands: CommandService): void {
  app.get(
    '/api/commands/types',
    {
      schema: {
        tags: TAGS,
        summary: "The command types a device's protocol can send (only custom before it has connected); without deviceId, every type some protocol sends",
        querystring: Type.Object({ deviceId: Type.Optional(IdParam) }),
        response: { 200: Type.Array(Type.Object({ type: Type.String() })), ...errorResponses(400, 401, 403, 404, 502) },
      },
    },
    async (request) => commands.types(requireIdentity(request).userId, request, request.query.deviceId),
  );

  app.post(
    '/api/commands/send',
    {
      schema: {
        tags: TAGS,
        summary: 'Send a command: 200 sent when written to the device, 202 queued until it connects',
        description:
          '{deviceId, type, attributes} or {deviceId, commandId} (a saved command). 400 UNSUPPORTED_COMMAND, INVALID_COMMAND_ATTRIBUTES; ' +
          '403 FORBIDDEN, PERMISSION_REQUIRED, USER_READONLY, USER_DEVICE_READONLY, COMMANDS_LIMITED (limitCommands users may send saved commands only); 404; ' +
          '409 COMMAND_QUEUE_FULL (MAX_QUEUED_COMMANDS_PER_DEVICE commands wait for the device); 429 RATE_LIMITED (COMMAND_SEND_RATE sends per user per minute, Retry-After).',
        body: SendRequest,
        response: { 200: CommandSchema, 202: CommandSchema, ...errorResponses(400, 401, 403, 404, 409, 429, 502) },
      },
    },
    async (request, reply) => {
      const command = await commands.send(requireIdentity(request).userId, request, request.body);
      return reply.code(command.status === 'queued' ? 202 : 200).send(command);
    },
  );

  app.get(
    '/api/commands/history',
    {
      schema: {
        tags: TAGS,
        summary: 'Commands sent to a device, by createdAt ascending (default: the last 24 hours), at most 1000; kept COMMAND_HISTORY_DAYS (90) days at most',
        querystring: Type.Object({ deviceId: IdParam, from: Type.Optional(QueryTime), to: Type.Optional(QueryTime) }),
        response: { 200: Type.Array(CommandSchema), ...errorResponses(400, 401, 403, 404, 502) },
      },
    },
    async (request) => commands.history(requireIdentity(request).userId, request, request.query),
  );

  app.get(
    '/api/commands',
    {
      schema: {
        tags: TAGS,
        summary: "The caller's saved commands and those administrators saved for everyone",
        response: { 200: Type.Array(SavedCommandSchema), ...errorResponses(401, 502) },
      },
    },
    async (request) => commands.listSaved(requireIdentity(request).userId),
  );

  app.post(
    '/api/commands',
    {
      schema: {
        tags: TAGS,
        summary: 'Save a command (403 USER_READONLY, COMMANDS_LIMITED; 409 SAVED_COMMANDS_LIMIT_REACHED)',
        body: SavedCommandRequest,
        response: { 201: SavedCommandSchema, ...errorResponses(400, 401, 403, 409, 502) },
      },
    },
    async (request, reply) => reply.code(201).send(await commands.createSaved(requireIdentity(request).userId, request.body)),
  );

  app.get(
    '/api/commands/:id',
    {
      schema: { tags: TAGS, summary: 'One saved command', params: IdParams, response: { 200: SavedCommandSchema, ...errorResponses(400, 401, 404, 502) } },
    },
    async (request) => commands.getSaved(requireIdentity(request).userId, request.params.id),
  );

  app.put(
    '/api/commands/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Change a saved command (its creator only)',
        params: IdParams,
        body: SavedCommandRequest,
        response: { 200: SavedCommandSchema, ...errorResponses(400, 401, 403, 404, 502) },
      },
    },
    async (request) => commands.updateSaved(requireIdentity(request).userId, request.params.id, request.body),
  );

  app.delete(
    '/api/commands/:id',
    {
      schema: { tags: TAGS, summary: 'Delete a saved command (its creator only)', params: IdParams, response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 502) } },
    },
    async (request, reply) => {
      await commands.deleteSaved(requireIdentity(request).userId, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
