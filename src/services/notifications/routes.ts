import { Type } from 'typebox';
import type { HttpApp } from '../../platform/http/app.ts';
import { requireIdentity } from '../../platform/http/identity.ts';
import { errorResponses, IdParam } from '../../platform/http/schemas.ts';
import { EVENT_TYPES } from '../tracking/events/types.ts';
import type { DeliveryService } from './deliveries/service.ts';
import type { RuleService } from './rules.ts';
import {
  DeliveryQuery,
  DeliverySchema,
  RuleParams,
  RuleRequest,
  RuleSchema,
  TargetRequest,
  TargetSchema,
  TestRequest,
  TestResult,
} from './schemas.ts';
import type { Channel } from './schemas.ts';
import type { TargetService } from './targets.ts';

const TAGS = ['notifications'];

export interface NotificationRouteDeps {
  rules: RuleService;
  targets: TargetService;
  deliveries: DeliveryService;
  channels: () => readonly Channel[];
  /** The VAPID public key browsers subscribe with; undefined when this process has no Web Push sender. */
}

export function registerNotificationRoutes(app: HttpApp, deps: NotificationRouteDeps): void {
  const { rules, targets, deliveries, channels } = deps;

  app.get(
    '/api/notifications',
    { schema: { tags: TAGS, summary: "The caller's notification rules", response: { 200: Type.Array(RuleSchema), ...errorResponses(401) } } },
    async (request) => rules.list(requireIdentity(request).userId),
  );

  app.post(
    '/api/notifications',
    {
      schema: {
        tags: TAGS,
        summary: 'Create a notification rule',
        description:
          'webhookSecret is in this answer only. 400 CHANNEL_NOT_AVAILABLE, WEBHOOK_URL_REQUIRED, INVALID_WEBHOOK_URL (not http(s), does not resolve, or resolves to a loopback, private or link-local address unless NOTIFY_ALLOW_PRIVATE_URLS), INVALID_ALARMS, DEVICES_REQUIRED (no deviceIds without always); 403 FORBIDDEN for a device the caller may not receive notifications of; 409 LIMIT_REACHED past MAX_NOTIFICATION_RULES_PER_USER.',
        body: RuleRequest,
        response: { 201: RuleSchema, ...errorResponses(400, 401, 403, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await rules.create(requireIdentity(request).userId, request, request.body)),
  );

  app.get(
    '/api/notifications/types',
    { schema: { tags: TAGS, summary: 'The event types a rule may name', response: { 200: Type.Array(Type.Object({ type: Type.String() })), ...errorResponses(401) } } },
    async () => EVENT_TYPES.map((type) => ({ type })),
  );

  app.get(
    '/api/notifications/channels',
    { schema: { tags: TAGS, summary: 'The channels this server has configured', response: { 200: Type.Array(Type.Object({ name: Type.String() })), ...errorResponses(401) } } },
    async () => channels().map((name) => ({ name })),
  );

  app.post(
    '/api/notifications/test',
    {
      schema: {
        tags: TAGS,
        summary: 'Send a test notification to the caller (one channel, or every configured one)',
        description: '400 CHANNEL_NOT_AVAILABLE; 429 RATE_LIMITED past 10 a minute.',
        body: Type.Optional(TestRequest),
        response: { 200: TestResult, ...errorResponses(400, 401, 429) },
      },
    },
    async (request) => ({ results: await deliveries.test(requireIdentity(request).userId, request.body?.channel) }),
  );

  app.get(
    '/api/notifications/targets',
    { schema: { tags: TAGS, summary: "The caller's push targets", response: { 200: Type.Array(TargetSchema), ...errorResponses(401) } } },
    async (request) => targets.list(requireIdentity(request).userId),
  );

  app.get(
    '/api/notifications/targets/webpush-key',
    {
      schema: {
        tags: TAGS,
        summary: 'The VAPID public key a browser subscribes to Web Push with (applicationServerKey)',
        description: '400 CHANNEL_NOT_AVAILABLE when this server offers no Web Push.',
        response: { 200: Type.Object({ publicKey: Type.String() }), ...errorResponses(400, 401) },
      },
    },
    async () => ({ publicKey: targets.webPushKey() }),
  );

  app.post(
    '/api/notifications/targets',
    {
      schema: {
        tags: TAGS,
        summary: 'Register a push target (an FCM or APNs token, or a Web Push subscription)',
        description:
          '201 created; 200 with the existing target when the token or endpoint is registered already. 400 CHANNEL_NOT_AVAILABLE (kind not configured), INVALID_PUSH_TARGET; 409 LIMIT_REACHED past MAX_PUSH_TARGETS_PER_USER.',
        body: TargetRequest,
        response: { 200: TargetSchema, 201: TargetSchema, ...errorResponses(400, 401, 409) },
      },
    },
    async (request, reply) => {
      const { target, created } = await targets.register(requireIdentity(request).userId, request.body);
      return reply.code(created ? 201 : 200).send(target);
    },
  );

  app.delete(
    '/api/notifications/targets/:id',
    { schema: { tags: TAGS, summary: 'Remove a push target', params: Type.Object({ id: IdParam }), response: { 204: Type.Null(), ...errorResponses(401, 404) } } },
    async (request, reply) => {
      await targets.delete(requireIdentity(request).userId, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/notifications/deliveries',
    {
      schema: {
        tags: TAGS,
        summary: "The caller's latest deliveries (100), newest first; status=failed for failures with their last error",
        querystring: DeliveryQuery,
        response: { 200: Type.Array(DeliverySchema), ...errorResponses(400, 401) },
      },
    },
    async (request) => deliveries.list(requireIdentity(request).userId, request.query.status),
  );

  app.post(
    '/api/notifications/deliveries/:id/retry',
    {
      schema: {
        tags: TAGS,
        summary: 'Queue a failed delivery again (same delivery id), with a new retry window',
        description: '404 NOT_FOUND; 409 DELIVERY_NOT_FAILED.',
        params: Type.Object({ id: IdParam }),
        response: { 200: DeliverySchema, ...errorResponses(401, 404, 409) },
      },
    },
    async (request) => deliveries.retry(requireIdentity(request).userId, request.params.id),
  );

  app.get(
    '/api/notifications/:id',
    { schema: { tags: TAGS, summary: 'One of the caller’s rules', params: RuleParams, response: { 200: RuleSchema, ...errorResponses(401, 404) } } },
    async (request) => rules.get(requireIdentity(request).userId, request.params.id),
  );

  app.put(
    '/api/notifications/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Replace one of the caller’s rules',
        description: 'The codes of POST; 404 NOT_FOUND. A rule given the webhook channel for the first time gets its webhookSecret in this answer.',
        params: RuleParams,
        body: RuleRequest,
        response: { 200: RuleSchema, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => rules.update(requireIdentity(request).userId, request, request.params.id, request.body),
  );

  app.delete(
    '/api/notifications/:id',
    { schema: { tags: TAGS, summary: 'Delete one of the caller’s rules (its pending deliveries go with it)', params: RuleParams, response: { 204: Type.Null(), ...errorResponses(401, 404) } } },
    async (request, reply) => {
      await rules.delete(requireIdentity(request).userId, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
