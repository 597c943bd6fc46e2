// Values generated from a JSON Schema of the OpenAPI document: valid ones, so requests get past validation and
// reach the services, and odd ones aimed at the schema's type and bounds. Fields named like the fixtures (id,
// email, uniqueId, token…) sometimes carry the fixtures' values.
import fc from 'fast-check';
import { FuzzObject, ODD_NUMBERS, ODD_STRINGS, PROTOTYPE_PROBES, RawJson, Ref, fromJs, oddValue } from './values.ts';
import type { FuzzValue, RefName } from './values.ts';

export interface JsonSchema {
  type?: string | string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  items?: JsonSchema;
  maxItems?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  maxProperties?: number;
}

const ANY_USER: RefName[] = ['owner.id', 'other.id', 'admin.id'];
const ANY_ID: RefName[] = ['owner.device', 'other.device', 'owner.geofence', 'owner.position', 'owner.event', ...ANY_USER];

/** Fixture values by the name of the field or parameter that may carry them. */
const HINTS: Record<string, RefName[]> = {
  id: ANY_ID,
  deviceId: ['owner.device', 'other.device'],
  userId: ANY_USER,
  user_id: ANY_USER,
  email: ['owner.email', 'other.email', 'admin.email'],
  password: ['owner.password'],
  currentPassword: ['owner.password'],
  uniqueId: ['owner.device.uniqueId', 'other.device.uniqueId', 'claim.uniqueId'],
  token: ['claim.token'],
  deviceToken: ['claim.token'],
  subscription_id: ['stripe.subscription', 'apple.transaction', 'google.purchaseToken'],
  purchaseToken: ['google.purchaseToken'],
};

/** Generated strings stay short: the odd values cover the long ones. */
const MAX_GENERATED_LENGTH = 40;

/**
 * A value for the schema. With `oddness` above 0, each field of an object is odd with that probability
 * (a typed odd value, see `oddFor`), so a body is mostly valid with a wrong field or two.
 */
export function valueFor(schema: JsonSchema, name?: string, oddness = 0): fc.Arbitrary<FuzzValue> {
  const base = schemaValue(schema, oddness);
  const hints = name === undefined ? undefined : HINTS[name];
  if (!hints || !(accepts(schema, 'string') || accepts(schema, 'integer'))) return base;
  return fc.oneof({ weight: 2, arbitrary: base }, { weight: 1, arbitrary: fc.constantFrom(...hints).map((ref) => new Ref(ref)) });
}

function accepts(schema: JsonSchema, type: string): boolean {
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) return branches.some((branch) => accepts(branch, type));
  return schema.type === type || (Array.isArray(schema.type) && schema.type.includes(type));
}

function schemaValue(schema: JsonSchema, oddness: number): fc.Arbitrary<FuzzValue> {
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) return fc.oneof(...branches.map((branch) => schemaValue(branch, oddness)));
  if (schema.enum) return fc.constantFrom(...schema.enum.map(fromJs));
  if (schema.const !== undefined) return fc.constant(fromJs(schema.const));
  if (Array.isArray(schema.type)) return fc.oneof(...schema.type.map((type) => schemaValue({ ...schema, type }, oddness)));
  switch (schema.type) {
    case 'string':
      return stringValue(schema);
    case 'integer':
      return fc.integer({ min: Math.max(schema.minimum ?? -1000, Number.MIN_SAFE_INTEGER), max: Math.min(schema.maximum ?? 1000, Number.MAX_SAFE_INTEGER) });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(schema.items ? schemaValue(schema.items, oddness) : anyJson(), { maxLength: Math.min(schema.maxItems ?? 5, 5) });
    case 'object':
      return objectValue(schema, oddness);
    default:
      return anyJson();
  }
}

function stringValue(schema: JsonSchema): fc.Arbitrary<string> {
  const minLength = schema.minLength ?? 0;
  const maxLength = Math.max(minLength, Math.min(schema.maxLength ?? MAX_GENERATED_LENGTH, MAX_GENERATED_LENGTH));
  const fits = (text: string) => text.length >= minLength && text.length <= (schema.maxLength ?? Infinity);
  switch (schema.format) {
    case 'email':
      return fc.emailAddress().filter(fits);
    case 'date-time':
      return fc.date({ min: new Date(0), max: new Date(Date.UTC(2100, 0)), noInvalidDate: true }).map((date) => date.toISOString());
    case 'uuid':
      return fc.uuid();
  }
  if (schema.pattern !== undefined) return fc.stringMatching(new RegExp(schema.pattern), { maxLength }).filter(fits);
  return fc.string({ minLength, maxLength, unit: 'grapheme' }).filter(fits);
}

function objectValue(schema: JsonSchema, oddness: number): fc.Arbitrary<FuzzValue> {
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties ?? {}).map(([name, property]) => {
    const valid = valueFor(property, name, oddness);
    const field = oddness > 0
      ? fc.oneof({ weight: Math.round((1 - oddness) * 100), arbitrary: valid }, { weight: Math.round(oddness * 100), arbitrary: oddFor(property) })
      : valid;
    const entry = field.map((value): [string, FuzzValue][] => [[name, value]]);
    return required.has(name) ? entry : fc.option(entry, { nil: [] as [string, FuzzValue][], freq: 2 });
  });
  const additional = typeof schema.additionalProperties === 'object'
    ? fc.dictionary(fc.string({ maxLength: 12 }), anyJson(), { maxKeys: Math.min(schema.maxProperties ?? 4, 4) })
      .map((extra) => Object.entries(extra).map(([key, value]): [string, FuzzValue] => [key, value]))
    : fc.constant([] as [string, FuzzValue][]);
  return fc.tuple(fc.tuple(...fields), additional).map(([present, extra]) => new FuzzObject([...present.flat(), ...extra]));
}

function anyJson(): fc.Arbitrary<FuzzValue> {
  return fc.jsonValue({ maxDepth: 2 }).map(fromJs);
}

// Odd values aimed at a schema

/** Numbers written in every notation a parser might accept, as the text of a parameter. */
const ODD_NUMERIC_TEXTS = [
  '1e309', '-1e309', '-0', '0', '-1', '1.5', '0x2', '2e0', '1E2', '+1', ' 1', '01', '0b1', '.5', '1e-7', '١',
  '9007199254740992', '9007199254740993', '99999999999999999999', 'NaN', 'Infinity', '', 'null', 'true', '1,2',
];

const ODD_DATES = [
  '1970-01-01T00:00:00Z', '0000-01-01T00:00:00Z', '+275760-09-13T00:00:00.000Z', '-000001-01-01T00:00:00Z',
  '2025-02-30T25:61:61Z', '2025-01-01T00:00:00', '2025-01-01', '9999-12-31T23:59:59.999Z', '1e309', 'now', '',
];

/** A JSON value of the wrong type or just out of the schema's bounds. */
export function oddFor(schema: JsonSchema): fc.Arbitrary<FuzzValue> {
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) return fc.oneof(...branches.map((branch) => oddFor(branch)));
  const wrongType = fc.constantFrom<FuzzValue>(null, true, 'text', 1, [], new FuzzObject([]), ...PROTOTYPE_PROBES);
  switch (schema.type) {
    case 'integer':
    case 'number':
      return fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...ODD_NUMBERS) },
        { weight: 2, arbitrary: fc.constantFrom(...boundsOf(schema).map((bound) => new RawJson(String(bound)))) },
        { weight: 2, arbitrary: fc.constantFrom(...ODD_NUMERIC_TEXTS) },
        { weight: 1, arbitrary: wrongType },
      );
    case 'string':
      return fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...(schema.format === 'date-time' ? ODD_DATES : ODD_STRINGS)) },
        { weight: 3, arbitrary: withOddCharacter(schema) },
        { weight: 2, arbitrary: fc.constantFrom(...overlong(schema)) },
        { weight: 1, arbitrary: wrongType },
      );
    case 'boolean':
      return fc.constantFrom<FuzzValue>('true', 'false', 1, 0, 'yes', null, new RawJson('1e309'));
    default:
      return fc.oneof({ weight: 1, arbitrary: wrongType }, { weight: 1, arbitrary: oddValue() });
  }
}

/** The text of an odd query or path parameter. */
export function oddTextFor(schema: JsonSchema): fc.Arbitrary<string> {
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) return fc.oneof(...branches.map((branch) => oddTextFor(branch)));
  switch (schema.type) {
    case 'integer':
    case 'number':
      return fc.constantFrom(...ODD_NUMERIC_TEXTS, ...boundsOf(schema).map(String));
    case 'boolean':
      return fc.constantFrom('', 'yes', '2', 'TRUE', 'null', '1e309', 'true,false');
    case 'array':
      return schema.items ? oddTextFor(schema.items) : fc.constantFrom(...ODD_STRINGS);
    default: {
      const typed = schema.format === 'date-time' ? ODD_DATES : ODD_STRINGS;
      const enumerated = (schema.enum ?? []).flatMap((value) => [String(value).toUpperCase(), ` ${String(value)}`, `${String(value)}\u0000`]);
      return fc.oneof(fc.constantFrom(...typed, ...overlong(schema), ...enumerated), withOddCharacter(schema));
    }
  }
}

/** Characters a database or a parser may choke on: NUL, lone surrogates, line and direction controls. */
const ODD_CHARACTERS = ['\u0000', '\ud800', '\udc00', '\u0001', '\u001b', '\u007f', '\u0085', '\u2028', '\u202e', '\ufeff', '\ufffe', '\r\n'];

/** A valid value with one odd character put in, so that it passes every other check. */
function withOddCharacter(schema: JsonSchema): fc.Arbitrary<string> {
  const valid = schema.enum ? fc.constantFrom(...schema.enum.map(String)) : stringValue(schema);
  return fc.tuple(valid, fc.constantFrom(...ODD_CHARACTERS), fc.nat()).map(([text, character, at]) => {
    const position = at % (text.length + 1);
    return `${text.slice(0, position)}${character}${text.slice(position)}`;
  });
}

function boundsOf(schema: JsonSchema): number[] {
  return [
    ...(schema.minimum === undefined ? [] : [schema.minimum - 1]),
    ...(schema.maximum === undefined ? [] : [schema.maximum + 1, schema.maximum * 10]),
    2 ** 31,
  ];
}

function overlong(schema: JsonSchema): string[] {
  const limit = schema.maxLength ?? 1024;
  return [limit + 1, limit * 10 + 1].map((length) => 'x'.repeat(Math.min(length, 200_000)));
}
