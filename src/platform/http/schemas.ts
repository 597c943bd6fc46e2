import { Type } from 'typebox';
import { DECIMAL_INTEGER_KEYWORD, JSON_LIMITS_KEYWORD } from './keywords.ts';
import type { IntegerBounds, JsonLimits } from './keywords.ts';

/** The error body every module answers with (see errors.ts and the one handler in app.ts), for the OpenAPI output. */
/** The schema, or null. */
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const ErrorSchema = Type.Object({
  statusCode: Type.Integer(),
  error: Type.String(),
  code: Type.String(),
  message: Type.String(),
  details: Type.Optional(
    Type.Array(
      Type.Object({
        path: Type.String(),
        message: Type.String(),
        limit: Type.Optional(Type.String({ description: 'LIMIT_REACHED, PLAN_LIMIT_REACHED: which limit' })),
        max: Type.Optional(Type.Integer({ description: 'LIMIT_REACHED, PLAN_LIMIT_REACHED: its value' })),
        usage: Type.Optional(Type.Integer({ description: 'LIMIT_REACHED, PLAN_LIMIT_REACHED: the usage before the request' })),
        feature: Type.Optional(Type.String({ description: 'FEATURE_NOT_IN_PLAN: `commands`, `reports`, `scheduledReports` or `channels.<name>`' })),
      }),
    ),
  ),
});

/** Error responses a route documents, by status. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorSchema> {
  return Object.fromEntries(statuses.map((status) => [status, ErrorSchema]));
}

/**
 * A whole number in a path or query string: decimal digits only (never `0x2`, `2e0`, `2.0`, ` 2`
 * or `1e309`) within the bounds, handed to the route as a number. Anything else: 400 VALIDATION_FAILED.
 */
export function DecimalInteger(bounds: IntegerBounds, options: { default?: number; description?: string } = {}) {
  return Type.Unsafe<number>(
    Type.String({
      pattern: '^(0|[1-9][0-9]*)$',
      maxLength: String(bounds.maximum).length,
      [DECIMAL_INTEGER_KEYWORD]: bounds,
      ...(options.default === undefined ? {} : { default: String(options.default) }),
      ...(options.description === undefined ? {} : { description: options.description }),
    }),
  );
}

/** A time stored as epoch milliseconds, as the API writes it: ISO 8601, or null for none. */
export function isoOrNull(epochMs: number | null): string | null {
  return epochMs === null ? null : new Date(epochMs).toISOString();
}

/** A database id (path parameter or query filter): 1 to 2^53 - 1. */
export const IdParam = DecimalInteger({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });

/** Free-form `attributes` of a resource stored as JSON. */
export const ATTRIBUTES_LIMITS: JsonLimits & { maxKeys: number; maxKeyLength: number } = {
  maxDepth: 8,
  maxBytes: 16_384,
  maxKeys: 100,
  maxKeyLength: 128,
};

/**
 * An `attributes` object of a request: at most 100 keys of at most 128 characters, values nested
 * at most 8 levels, at most 16 KiB as JSON. Each refusal is 400 VALIDATION_FAILED naming the path.
 */
export function AttributesInput(description = 'Free-form settings') {
  const { maxDepth, maxBytes, maxKeys, maxKeyLength } = ATTRIBUTES_LIMITS;
  // A Record's key schema is not enforced by the JSON Schema it produces: propertyNames does that.
  return Type.Record(Type.String(), Type.Unknown(), {
    maxProperties: maxKeys,
    propertyNames: { maxLength: maxKeyLength },
    [JSON_LIMITS_KEYWORD]: { maxDepth, maxBytes },
    description: `${description} (at most ${maxKeys} keys, nested at most ${maxDepth} levels, ${maxBytes / 1024} KiB as JSON)`,
  });
}
