import { Type } from 'typebox';
import type { Static } from 'typebox';
import { AttributesInput, IdParam, Nullable } from '../../platform/http/schemas.ts';
import { EVENT_TYPES } from '../tracking/events/types.ts';

/** Every channel a rule may name; GET /channels says which of them this server has configured. */
export const CHANNELS = ['web', 'mail', 'webhook', 'webpush', 'fcm', 'apns'] as const;
export type Channel = (typeof CHANNELS)[number];

export const PUSH_KINDS = ['webpush', 'fcm', 'apns'] as const;

/** Most devices one rule may name. */
export const MAX_RULE_DEVICES = 1000;

/** One of `values`, typed as such. */
function oneOf<T extends string>(values: readonly T[], options: { description?: string } = {}) {
  return Type.Unsafe<T>(Type.Union(values.map((value) => Type.Literal(value)), options));
}

export const RuleParams = Type.Object({ id: IdParam });

export const RuleRequest = Type.Object(
  {
    type: oneOf(EVENT_TYPES, { description: 'An event type of spec §2.5' }),
    always: Type.Optional(Type.Boolean({ description: 'Every device the caller may see with the notifications permission (default false)' })),
    deviceIds: Type.Optional(Type.Array(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), { maxItems: MAX_RULE_DEVICES, uniqueItems: true })),
    channels: Type.Array(oneOf(CHANNELS), { minItems: 1, maxItems: CHANNELS.length, uniqueItems: true }),
    attributes: Type.Optional(AttributesInput('webhookUrl (webhook channel), alarms (comma-separated alarm names, alarm rules), and free-form settings')),
    calendarId: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }))),
  },
  { additionalProperties: false },
);
export type RuleRequest = Static<typeof RuleRequest>;

export const RuleSchema = Type.Object({
  id: Type.Integer(),
  type: Type.String(),
  always: Type.Boolean(),
  deviceIds: Type.Array(Type.Integer()),
  channels: Type.Array(Type.String()),
  attributes: Type.Record(Type.String(), Type.Unknown()),
  calendarId: Nullable(Type.Integer()),
  createdAt: Type.String({ format: 'date-time' }),
  webhookSecret: Type.Optional(Type.String({ description: 'The webhook signing secret: in the answer that created it, never again' })),
});
export type RuleView = Static<typeof RuleSchema>;

export const TestRequest = Type.Object(
  { channel: Type.Optional(oneOf(CHANNELS)) },
  { additionalProperties: false },
);

export const TestResult = Type.Object({
  results: Type.Array(
    Type.Object({
      channel: Type.String(),
      target: Type.Optional(Type.String()),
      outcome: Type.Union([Type.Literal('sent'), Type.Literal('failed')]),
      error: Type.Optional(Type.String()),
    }),
  ),
});

export const TargetRequest = Type.Object(
  {
    kind: oneOf(PUSH_KINDS),
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, pattern: '^[\\x21-\\x7e]+$', description: 'FCM registration token or APNs device token' })),
    subscription: Type.Optional(
      Type.Object(
        {
          endpoint: Type.String({ minLength: 1, maxLength: 2048 }),
          expirationTime: Type.Optional(Nullable(Type.Number())),
          keys: Type.Object({ p256dh: Type.String({ minLength: 1, maxLength: 256 }), auth: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false }),
        },
        { additionalProperties: false, description: 'A browser PushSubscription (webpush)' },
      ),
    ),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  },
  { additionalProperties: false },
);
export type TargetRequest = Static<typeof TargetRequest>;

export const TargetSchema = Type.Object({
  id: Type.Integer(),
  kind: Type.String(),
  name: Nullable(Type.String()),
  /** Never the token itself: enough to tell targets apart. */
  hint: Type.String({ description: 'The last characters of the token, or the push service host' }),
  createdAt: Type.String({ format: 'date-time' }),
});
export type TargetView = Static<typeof TargetSchema>;

export const DeliveryQuery = Type.Object(
  {
    status: Type.Optional(oneOf(['pending', 'sent', 'failed', 'collapsed', 'dropped'])),
  },
  { additionalProperties: false },
);

export const DeliverySchema = Type.Object({
  id: Type.Integer(),
  deliveryId: Type.String({ description: 'The Trackstack-Delivery id a webhook receiver sees' }),
  ruleId: Type.Integer(),
  eventId: Type.Integer(),
  deviceId: Type.Integer(),
  channel: Type.String(),
  targetId: Nullable(Type.Integer()),
  status: Type.String(),
  attempts: Type.Integer(),
  lastError: Nullable(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
  nextAttemptAt: Nullable(Type.String({ format: 'date-time' })),
  sentAt: Nullable(Type.String({ format: 'date-time' })),
});
export type DeliveryView = Static<typeof DeliverySchema>;
