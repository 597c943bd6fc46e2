// Requests for one operation of the OpenAPI document: valid ones that reach the services, and ones with odd
// parameters, bodies, content types and credentials. They are generated before the fixtures are known and name
// them by reference, so one seed gives the same requests on every engine.
import fc from 'fast-check';
import { oddTextFor, valueFor } from './schema.ts';
import type { JsonSchema } from './schema.ts';
import {
  FuzzObject,
  ODD_BODY_TEXTS,
  ODD_CONTENT_TYPES,
  ODD_KEYS,
  ODD_SEGMENTS,
  applyMutation,
  mutation,
  oddValue,
  toJsonText,
  toText,
} from './values.ts';
import type { FuzzValue, Mutation, Resolve } from './values.ts';
import { signedWebhookDelivery } from './webhooks.ts';
import type { SignedWebhookDelivery, WebhookProvider } from './webhooks.ts';

export interface Operation {
  method: string;
  /** As the document writes it, e.g. /api/devices/{id}. */
  path: string;
  pathParams: Parameter[];
  query: Parameter[];
  body: { contentType: string; schema: JsonSchema } | undefined;
}

interface Parameter {
  name: string;
  schema: JsonSchema;
}

interface OpenApiOperation {
  parameters?: { in: string; name: string; schema: JsonSchema }[];
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
}

export function operationsOf(document: { paths: Record<string, Record<string, OpenApiOperation>> }): Operation[] {
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => {
      const parameters = operation.parameters ?? [];
      const [contentType, media] = Object.entries(operation.requestBody?.content ?? {})[0] ?? [];
      return {
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((parameter) => parameter.in === 'path'),
        query: parameters.filter((parameter) => parameter.in === 'query'),
        body: contentType !== undefined && media ? { contentType, schema: media.schema } : undefined,
      };
    }),
  );
}

export const operationName = (operation: Operation) => `${operation.method} ${operation.path}`;

export type Caller = 'owner' | 'other' | 'admin' | 'anonymous' | 'service';

/** Who the request claims to be: a fixture user, a service, or a broken credential. */
export type Credential =
  | { kind: 'caller'; caller: Caller }
  /** The caller's token with one character changed. */
  | { kind: 'tampered'; caller: 'owner' | 'admin' }
  | { kind: 'header'; name: string; value: string };

const BROKEN_CREDENTIALS: Credential[] = ([
  ['authorization', 'Bearer'], ['authorization', 'Bearer '], ['authorization', 'Bearer abc'], ['authorization', 'bearer a.b.c'],
  ['authorization', `Bearer ${'a'.repeat(5000)}`], ['authorization', 'Basic dXNlcjpwYXNz'],
  ['authorization', 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.'], ['cookie', 'access_token=garbage'], ['cookie', 'access_token='],
  ['x-internal-token', 'wrong'], ['x-user-id', '1'],
] as const).map(([name, value]) => ({ kind: 'header', name, value }));

type Segment = { raw: string } | { value: FuzzValue };
type QueryEntry = [string, Segment];

export type Body =
  | { kind: 'none' }
  | { kind: 'value'; value: FuzzValue; contentType: string | undefined }
  | { kind: 'text'; text: string; contentType: string | undefined }
  | { kind: 'signed'; delivery: SignedWebhookDelivery };

export interface GeneratedRequest {
  credential: Credential;
  pathParams: Record<string, Segment>;
  query: QueryEntry[];
  body: Body;
}

const SIGNED_WEBHOOKS: Record<string, WebhookProvider> = {
  'POST /webhooks/stripe': 'stripe',
  'POST /webhooks/apple': 'apple',
  'POST /webhooks/google': 'google',
};

export function requestsFor(operation: Operation): fc.Arbitrary<GeneratedRequest> {
  const pathParams = fc.record(Object.fromEntries(operation.pathParams.map((parameter) => [parameter.name, segment(parameter)])));
  return fc.record({ credential: credential(), pathParams, query: query(operation), body: body(operation) });
}

function credential(): fc.Arbitrary<Credential> {
  const caller = (name: Caller, weight: number) => ({ weight, arbitrary: fc.constant<Credential>({ kind: 'caller', caller: name }) });
  return fc.oneof(
    caller('owner', 6),
    caller('admin', 6),
    caller('other', 3),
    caller('anonymous', 2),
    caller('service', 1),
    { weight: 1, arbitrary: fc.constantFrom<Credential>({ kind: 'tampered', caller: 'owner' }, { kind: 'tampered', caller: 'admin' }) },
    { weight: 2, arbitrary: fc.constantFrom(...BROKEN_CREDENTIALS) },
  );
}

function segment(parameter: Parameter): fc.Arbitrary<Segment> {
  return fc.oneof(
    { weight: 5, arbitrary: valueFor(parameter.schema, parameter.name).map((value): Segment => ({ value })) },
    { weight: 3, arbitrary: oddTextFor(parameter.schema).map((value): Segment => ({ value })) },
    { weight: 1, arbitrary: fc.constantFrom(...ODD_SEGMENTS).map((raw): Segment => ({ raw })) },
    { weight: 1, arbitrary: oddValue().map((value): Segment => ({ value })) },
  );
}

function query(operation: Operation): fc.Arbitrary<QueryEntry[]> {
  const declared = operation.query.map((parameter) => {
    const one = (part: fc.Arbitrary<Segment>) => part.map((value): QueryEntry[] => [[parameter.name, value]]);
    return fc.oneof(
      { weight: 3, arbitrary: fc.constant([] as QueryEntry[]) },
      { weight: 3, arbitrary: one(valueFor(parameter.schema, parameter.name).map((value): Segment => ({ value }))) },
      { weight: 3, arbitrary: one(oddTextFor(parameter.schema).map((value): Segment => ({ value }))) },
      { weight: 1, arbitrary: one(oddValue().map((value): Segment => ({ value }))) },
      // Repeated: a scalar parameter given twice arrives as an array.
      { weight: 1, arbitrary: fc.array(valueFor(parameter.schema, parameter.name), { minLength: 2, maxLength: 3 }).map((values) => values.map((value): QueryEntry => [parameter.name, { value }])) },
    );
  });
  const extra = fc.oneof(
    { weight: 6, arbitrary: fc.constant([] as QueryEntry[]) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...ODD_KEYS, 'a[b]', 'a.b', 'a%00'), oddValue()).map(([name, value]): QueryEntry[] => [[name, { value }]]) },
  );
  return fc.tuple(fc.tuple(...declared), extra).map(([entries, more]) => [...entries.flat(), ...more]);
}

/** Bodies over the 1 MiB limit are built once: they are large. */
const OVERSIZED_BODY: Body = { kind: 'text', text: `"${'a'.repeat(1_100_000)}"`, contentType: 'application/json' };

function body(operation: Operation): fc.Arbitrary<Body> {
  const provider = SIGNED_WEBHOOKS[operationName(operation)];
  const declared = operation.body;
  const anyContentType = fc.oneof(
    { weight: 4, arbitrary: fc.constant<string | undefined>(declared?.contentType ?? 'application/json') },
    { weight: 1, arbitrary: fc.constantFrom<string | undefined>(undefined, ...ODD_CONTENT_TYPES) },
  );
  const asValue = (value: fc.Arbitrary<FuzzValue>, contentType: fc.Arbitrary<string | undefined>) =>
    fc.record({ kind: fc.constant('value' as const), value, contentType });
  const oddBodies = [
    { weight: 4, arbitrary: asValue(oddValue(), anyContentType) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('text' as const), text: fc.constantFrom(...ODD_BODY_TEXTS), contentType: anyContentType }) },
    { weight: 1, arbitrary: fc.constant(OVERSIZED_BODY) },
  ];
  const withSchema: { weight: number; arbitrary: fc.Arbitrary<Body> }[] = declared
    ? [
        { weight: 6, arbitrary: asValue(valueFor(declared.schema), fc.constant(declared.contentType)) },
        // Mostly valid, with a field or two of the wrong type or out of bounds.
        { weight: 12, arbitrary: asValue(valueFor(declared.schema, undefined, 0.2), anyContentType) },
        {
          weight: 6,
          arbitrary: asValue(
            fc.tuple(valueFor(declared.schema), fc.array(mutation(), { minLength: 1, maxLength: 2 })).map(([value, changes]) => mutated(value, changes)),
            anyContentType,
          ),
        },
      ]
    : [{ weight: 24, arbitrary: fc.constant<Body>({ kind: 'none' }) }];
  const signed = provider
    ? [{ weight: 24, arbitrary: signedWebhookDelivery(provider).map((delivery): Body => ({ kind: 'signed', delivery })) }]
    : [];
  return fc.oneof(...withSchema, ...oddBodies, ...signed);
}

function mutated(value: FuzzValue, changes: Mutation[]): FuzzValue {
  return changes.reduce((changed, change) => applyMutation(changed, change), value);
}

// Rendering

export interface RenderedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload: string | undefined;
}

/** What a request needs of the fixtures when it is sent. */
export interface RequestContext {
  resolve: Resolve;
  credentialHeaders(credential: Credential): Record<string, string>;
  sign(delivery: SignedWebhookDelivery): Promise<{ headers: Record<string, string>; payload: string }>;
}

export async function render(operation: Operation, request: GeneratedRequest, context: RequestContext): Promise<RenderedRequest> {
  const { resolve } = context;
  const segmentText = (part: Segment) => ('raw' in part ? part.raw : urlEncode(toText(part.value, resolve)));
  const path = operation.path.replace(/\{([^}]+)\}/g, (_match, name: string) => {
    const part = request.pathParams[name];
    return part === undefined ? name : segmentText(part);
  });
  const search = request.query.map(([name, part]) => `${urlEncode(name)}=${segmentText(part)}`).join('&');
  const headers = context.credentialHeaders(request.credential);
  const url = search === '' ? path : `${path}?${search}`;
  const { body } = request;
  switch (body.kind) {
    case 'none':
      return { method: operation.method, url, headers, payload: undefined };
    case 'signed': {
      const delivery = await context.sign(body.delivery);
      return { method: operation.method, url, headers: { ...headers, ...delivery.headers }, payload: delivery.payload };
    }
    case 'value':
    case 'text': {
      const payload = body.kind === 'text' ? body.text : serialise(body.value, body.contentType, resolve);
      return { method: operation.method, url, headers: { ...headers, ...(body.contentType === undefined ? {} : { 'content-type': body.contentType }) }, payload };
    }
  }
}

function serialise(value: FuzzValue, contentType: string | undefined, resolve: Resolve): string {
  if (contentType !== 'application/x-www-form-urlencoded' || !(value instanceof FuzzObject)) return toJsonText(value, resolve);
  return value.entries.map(([key, entry]) => `${urlEncode(key)}=${urlEncode(toText(entry, resolve))}`).join('&');
}

/** encodeURIComponent, except that a lone surrogate (which it refuses) goes out as the bytes of U+FFFD. */
function urlEncode(text: string): string {
  return encodeURIComponent(text.toWellFormed());
}
