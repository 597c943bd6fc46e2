// The values the route fuzzer sends, and the odd ones it swaps in. Values are kept as a small tree rather than
// JavaScript objects so that a body can carry what JSON.stringify cannot write: numbers such as 1e309 or -0,
// duplicate keys, `__proto__` as an ordinary key, and nesting deeper than a recursive serialiser survives.
import fc from 'fast-check';

/** Text written into a JSON body as it is. */
export class RawJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** An object as an ordered list of entries: keys may repeat and may be `__proto__`. */
export class FuzzObject {
  readonly entries: readonly (readonly [string, FuzzValue])[];
  constructor(entries: readonly (readonly [string, FuzzValue])[]) {
    this.entries = entries;
  }
}

/** What the fixtures hold (an id, an e-mail address, a token), looked up when the request is sent. */
export const REF_NAMES = [
  'owner.id', 'other.id', 'admin.id',
  'owner.email', 'other.email', 'admin.email', 'owner.password',
  'owner.device', 'other.device', 'owner.device.uniqueId', 'other.device.uniqueId',
  'owner.geofence', 'owner.position', 'owner.event',
  'claim.token', 'claim.uniqueId',
  'stripe.subscription', 'apple.transaction', 'google.purchaseToken',
] as const;
export type RefName = (typeof REF_NAMES)[number];

export class Ref {
  readonly name: RefName;
  constructor(name: RefName) {
    this.name = name;
  }
}

export type FuzzValue = null | boolean | number | string | RawJson | Ref | FuzzObject | readonly FuzzValue[];

export type Resolve = (ref: Ref) => string | number;

export function toJsonText(value: FuzzValue, resolve: Resolve): string {
  if (value instanceof RawJson) return value.text;
  if (value instanceof Ref) return JSON.stringify(resolve(value));
  if (value instanceof FuzzObject) {
    return `{${value.entries.map(([key, entry]) => `${JSON.stringify(key)}:${toJsonText(entry, resolve)}`).join(',')}}`;
  }
  if (Array.isArray(value)) return `[${value.map((item: FuzzValue) => toJsonText(item, resolve)).join(',')}]`;
  return JSON.stringify(value);
}

/** The value as a query, path or form field carries it. */
export function toText(value: FuzzValue, resolve: Resolve): string {
  if (typeof value === 'string') return value;
  if (value instanceof Ref) return String(resolve(value));
  if (value instanceof RawJson) return value.text;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  return toJsonText(value, resolve);
}

export function fromJs(value: unknown): FuzzValue {
  if (value === null || typeof value === 'boolean' || typeof value === 'number' || typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(fromJs);
  if (typeof value === 'object') return new FuzzObject(Object.entries(value).map(([key, entry]) => [key, fromJs(entry)]));
  return null;
}

// Odd values

/** Numbers as JSON text: beyond double range, negative zero, beyond 2^53, exponents, fractions where integers belong. */
export const ODD_NUMBERS = [
  '1e309', '-1e309', '-0', '0', '-1', '1.5', '0.1', '1e-7', '2e0', '1E2', '9007199254740992', '9007199254740993',
  '18446744073709551616', '123456789012345678901234567890', '-2147483649', '4294967296', '1e13', '1e300',
  '253402300800', '253402300800000', '8640000000000001',
].map((text) => new RawJson(text));

export const ODD_STRINGS = [
  '', ' ', '\t', '\n', 'NaN', 'Infinity', '-Infinity', '0x2', '2e0', '1e309', '-0', '+1', '01', '1_000', ' 1', '1 ', '1.0',
  '\u0661', 'null', 'true', 'undefined', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty',
  '\u0000', 'a\u0000b', '\ud800', '\udfff', '\u202e', '\ufeff', 'e\u0301', '\u{1F642}', '%00', '%', '%zz', '../../etc/passwd',
  '<script>alert(1)</script>', '\' OR \'1\'=\'1', '"; DROP TABLE users; --', '${jndi:ldap://x}', '{{7*7}}', '\\', '"',
  'CIRCLE (0 0, 1e309)', 'CIRCLE (91 181, -5)', 'CIRCLE (NaN NaN, 1)', 'POLYGON ((0 0, 0 1, 1 1, 0 0))', 'POLYGON ((0 0))',
  'LINESTRING (0 0, 1e309 1)', 'CIRCLE (0 0, 0x2)',
  '1970-01-01T00:00:00Z', '0000-01-01T00:00:00Z', '+275760-09-13T00:00:00.001Z', '2025-02-30T25:61:61Z', '2025-01-01T00:00:00',
  'a@b', 'A@EXAMPLE.COM', 'x@y.z\u0000', `${'a'.repeat(250)}@example.com`, 'XXXX-XXXX-XXXX', 'stripe', 'apple', 'google',
];

const OVERLONG_LENGTHS = [65, 129, 256, 1025, 4097, 100_001];

function deepArray(depth: number): RawJson {
  return new RawJson(`${'['.repeat(depth)}${']'.repeat(depth)}`);
}

function deepObject(depth: number): RawJson {
  return new RawJson(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`);
}

function wideObject(keys: number): RawJson {
  return new RawJson(`{${Array.from({ length: keys }, (_, index) => `"k${index}":${index}`).join(',')}}`);
}

/** Nesting a recursive walk may not survive, and more keys than any object of ours has. */
const DEEP_AND_WIDE = [...[64, 1000, 100_000].flatMap((depth) => [deepArray(depth), deepObject(depth)]), wideObject(101), wideObject(10_000)];

export const PROTOTYPE_PROBES: FuzzValue[] = [
  new FuzzObject([['__proto__', new FuzzObject([['administrator', true], ['polluted', true]])]]),
  new FuzzObject([['constructor', new FuzzObject([['prototype', new FuzzObject([['polluted', true]])]])]]),
  new FuzzObject([['a', 1], ['a', 'twice']]),
];

/** Keys an attacker adds to an object: prototype keys, mass assignment, and the odd shapes of a key. */
export const ODD_KEYS = [
  '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '', ' ', 'x'.repeat(300), '\u0000',
  'id', 'userId', 'user_id', 'ownerId', 'owner_id', 'administrator', 'isOwner', 'permissions', 'disabled',
];

/** Any code point, lone surrogates included (fast-check's 'binary' unit leaves them out and takes seconds to set up). */
const anyCodePoint = fc.integer({ min: 0, max: 0x10ffff }).map((codePoint) => String.fromCodePoint(codePoint));

export function oddValue(): fc.Arbitrary<FuzzValue> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...ODD_NUMBERS) },
    { weight: 6, arbitrary: fc.constantFrom(...ODD_STRINGS) },
    { weight: 2, arbitrary: fc.constantFrom(...OVERLONG_LENGTHS).map((length) => 'x'.repeat(length)) },
    { weight: 2, arbitrary: fc.string({ unit: anyCodePoint, maxLength: 40 }) },
    {
      weight: 4,
      arbitrary: fc.constantFrom<FuzzValue>(null, true, false, 0, 1, -1, [], new FuzzObject([]), [null], ['a', 1], [new FuzzObject([])]),
    },
    { weight: 2, arbitrary: fc.constantFrom(...PROTOTYPE_PROBES) },
    { weight: 2, arbitrary: fc.constantFrom(...DEEP_AND_WIDE) },
  );
}

/** Bodies that are not the JSON they claim to be, or JSON of a shape no route takes. */
export const ODD_BODY_TEXTS = [
  '', ' ', '{', '}', '[', '{"a":}', '{"a":1,}', '{\'a\':1}', '\ufeff{}', 'null', 'true', '"text"', '0', '-0', '1e309',
  '{"a":1}x', '{"a":1}{"b":2}', '{"a":"\\ud800"}', '{"a":"\\u0000"}', 'NaN', '\u0000', 'undefined', '[]', '{}',
  '{"__proto__":{"administrator":true}}', '{"constructor":{"prototype":{"polluted":true}}}', 'a=1&b=2',
  `${'['.repeat(100_000)}${']'.repeat(100_000)}`, `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`,
];

export const ODD_CONTENT_TYPES = [
  'text/plain', 'text/html', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml',
  'application/octet-stream', 'application/json-patch+json', 'application/vnd.api+json', 'application/JSON',
  'application/json; charset=latin1', 'application/json; charset=utf-16', 'application/json, text/plain', '*/*', ';',
  'application/json;', `application/${'x'.repeat(300)}`,
];

/** Path segments as they appear in the URL: numbers in every notation, reserved names, broken escapes and UTF-8. */
export const ODD_SEGMENTS = [
  '0', '-1', '1.5', '1e309', '0x2', '2e0', '+1', '%201', '1%20', '01', '9007199254740992', '9007199254740993',
  '99999999999999999999', 'NaN', 'Infinity', 'null', 'undefined', '__proto__', 'constructor', 'toString',
  'hasOwnProperty', '%00', '%zz', '%', '%2F', '%2e%2e', '..', '.', '%C0%AF', '%ED%A0%80', '%FF', '%E2%80%AE', '%D9%A1', '%F0%9F%99%82',
  '1;DROP', '1\'', 'a'.repeat(201), 'a'.repeat(1025), 'a'.repeat(5000), '1,2', '[1]', '%5B%5D', 'true',
];

export type MutationKind = 'replace' | 'delete' | 'insert' | 'duplicate';

export interface Mutation {
  kind: MutationKind;
  /** Picks the node, modulo the number of nodes. */
  pick: number;
  odd: FuzzValue;
  key: string;
}

export function mutation(odd: fc.Arbitrary<FuzzValue> = oddValue()): fc.Arbitrary<Mutation> {
  return fc.record({
    kind: fc.constantFrom<MutationKind>('replace', 'replace', 'replace', 'delete', 'insert', 'duplicate'),
    pick: fc.nat(),
    odd,
    key: fc.oneof(fc.constantFrom(...ODD_KEYS), fc.string({ maxLength: 12 })),
  });
}

interface Node {
  /** Entry or item indexes from the root. */
  path: number[];
  /** The key the node sits under, when its parent is an object. */
  key: string | undefined;
}

function nodesOf(value: FuzzValue, path: number[] = [], key: string | undefined = undefined, into: Node[] = []): Node[] {
  into.push({ path, key });
  if (value instanceof FuzzObject) value.entries.forEach(([entryKey, entry], index) => nodesOf(entry, [...path, index], entryKey, into));
  else if (Array.isArray(value)) value.forEach((item: FuzzValue, index: number) => nodesOf(item, [...path, index], undefined, into));
  return into;
}

function rewriteAt(value: FuzzValue, path: number[], rewrite: (node: FuzzValue) => FuzzValue | undefined): FuzzValue | undefined {
  if (path.length === 0) return rewrite(value);
  const [index, ...rest] = path as [number, ...number[]];
  if (value instanceof FuzzObject) {
    const entries = value.entries.flatMap(([entryKey, entry], position) => {
      if (position !== index) return [[entryKey, entry] as const];
      const next = rewriteAt(entry, rest, rewrite);
      return next === undefined ? [] : [[entryKey, next] as const];
    });
    return new FuzzObject(entries);
  }
  if (Array.isArray(value)) {
    return value.flatMap((item: FuzzValue, position: number) => {
      if (position !== index) return [item];
      const next = rewriteAt(item, rest, rewrite);
      return next === undefined ? [] : [next];
    });
  }
  return value;
}

/**
 * One change to one node of the value: replaced by an odd value, deleted, or given an odd or repeated key.
 * `keys` narrows the choice to nodes under matching keys, when there are any.
 */
export function applyMutation(value: FuzzValue, change: Mutation, keys?: RegExp): FuzzValue {
  const all = nodesOf(value);
  const matching = keys ? all.filter((node) => node.key !== undefined && keys.test(node.key)) : [];
  const nodes = matching.length > 0 ? matching : all;
  const path = nodes[change.pick % nodes.length]?.path ?? [];
  const rewritten = rewriteAt(value, path, (node) => {
    switch (change.kind) {
      case 'replace':
        return change.odd;
      case 'delete':
        return path.length === 0 ? change.odd : undefined;
      case 'insert':
        if (node instanceof FuzzObject) return new FuzzObject([...node.entries, [change.key, change.odd]]);
        if (Array.isArray(node)) return [...node, change.odd];
        return change.odd;
      case 'duplicate': {
        const first = node instanceof FuzzObject ? node.entries[0] : undefined;
        return first && node instanceof FuzzObject ? new FuzzObject([...node.entries, [first[0], change.odd]]) : change.odd;
      }
    }
  });
  return rewritten ?? change.odd;
}
