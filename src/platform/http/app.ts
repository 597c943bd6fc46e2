import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import Fastify from 'fastify';
import type {
  ConnectionError,
  FastifyBaseLogger,
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchemaCompiler,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv } from 'ajv';
import type { SchemaValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { AppError, ERROR_CODES } from './errors.ts';
import type { ErrorCode, ErrorDetail } from './errors.ts';
import { addInputKeywords, tooDeepAt } from './keywords.ts';
import { Readiness } from './readiness.ts';

export type HttpApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface HttpAppOptions {
  logLevel: string;
  bodyLimit: number;
  trustProxy: string | undefined;
  /** Where log lines go; standard output when absent. */
  logStream?: NodeJS.WritableStream;
}

/** Taken from the caller when it is well-formed (a gateway, a tracing proxy), else generated; echoed on every response. */
export const REQUEST_ID_HEADER = 'x-request-id';
const REQUEST_ID = /^[\w.:-]{1,64}$/;
/**
 * Answers carry tokens and personal data, so no cache keeps them unless a route says otherwise (the
 * JWKS, the legal documents); and a browser reads a body only as its Content-Type says.
 */
const PRIVATE_ANSWER_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' } as const;
/**
 * No request body nests deeper: ours need a handful of levels, and code that recurses over a value
 * (JSON.stringify among it) overflows the stack a few thousand levels down.
 */
export const MAX_BODY_DEPTH = 32;
const SECRET_QUERY = /([?&](?:token|access_token|refresh_token|code|state)=)[^&]*/gi;

// ajv-formats ships CommonJS with a default export property.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/**
 * Bodies are validated strictly (a string field never accepts 123); query strings, params and
 * headers arrive as text, so their numbers and booleans are coerced. No number is NaN or Infinity
 * (`1e309`), and no string anywhere may hold U+0000: PostgreSQL text cannot store it, so it is refused like any other invalid field.
 */
function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const shared = { removeAdditional: false, useDefaults: true, allErrors: false, strict: false, strictNumbers: true } as const;
  const strict = withNulKeyword(addInputKeywords(addFormats(new Ajv({ ...shared, coerceTypes: false }))));
  const coercing = withNulKeyword(addInputKeywords(addFormats(new Ajv({ ...shared, coerceTypes: 'array' }))));
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(refusingNul(schema) as object);
}

const NO_NUL = 'x-no-nul';

const refuseNul: SchemaValidateFunction = (_schema, data) => {
  if (typeof data !== 'string' || !data.includes('\u0000')) return true;
  refuseNul.errors = [{ keyword: NO_NUL, message: 'must not contain a NUL character', params: {} }];
  return false;
};

function withNulKeyword(ajv: Ajv): Ajv {
  return ajv.addKeyword({ keyword: NO_NUL, type: 'string', errors: true, validate: refuseNul });
}

/** Keywords whose values are data, not schemas. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples']);

/** A copy of the schema in which every string also refuses U+0000. */
function refusingNul(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(refusingNul);
  if (typeof schema !== 'object' || schema === null) return schema;
  const copy = Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, DATA_KEYWORDS.has(key) ? value : refusingNul(value)]));
  const type: unknown = copy['type'];
  return type === 'string' || (Array.isArray(type) && type.includes('string')) ? { ...copy, [NO_NUL]: true } : copy;
}

/** The one app factory every process uses: logging, request ids, validation and the error contract. */
export function createHttpApp(options: HttpAppOptions): HttpApp {
  const app = Fastify({
    logger: {
      level: options.logLevel,
      ...(options.logStream ? { stream: options.logStream } : {}),
      redact: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-internal-token"]'],
      serializers: {
        req: (request) => ({
          method: request.method,
          url: request.url.replace(SECRET_QUERY, '$1[redacted]'),
          remoteAddress: request.ip,
        }),
      },
    },
    bodyLimit: options.bodyLimit,
    trustProxy: options.trustProxy ?? false,
    forceCloseConnections: 'idle',
    clientErrorHandler: (error, socket) => answerClientError(app.log, error, socket),
    requestIdHeader: false,
    genReqId: (request) => {
      const incoming = request.headers[REQUEST_ID_HEADER];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1024 },
    // The router refuses a malformed percent-escape or an over-long path parameter before any hook runs.
    frameworkErrors: (error, request, reply) => {
      reply.headers({ [REQUEST_ID_HEADER]: request.id, ...PRIVATE_ANSWER_HEADERS });
      sendError(error, request, reply);
    },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as HttpApp;

  app.setValidatorCompiler(validatorCompiler());
  app.decorate('readiness', new Readiness());

  app.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    reply.headers(PRIVATE_ANSWER_HEADERS);
    done();
  });

  app.addHook('preValidation', (request, _reply, done) => {
    const deepPath = isParsedJson(request.body) ? tooDeepAt(request.body, MAX_BODY_DEPTH, '/body') : undefined;
    if (deepPath === undefined) return done();
    const message = `nests deeper than ${MAX_BODY_DEPTH} levels`;
    done(new AppError('VALIDATION_FAILED', `${deepPath} ${message}`, { details: [{ path: deepPath, message }] }));
  });

  // While closing, answers still in flight end their keep-alive connection, so close() need not wait for it to idle out.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(errorBody(404, 'NOT_FOUND', `Route ${request.method} ${request.url.split('?')[0]} not found`));
  });

  app.setErrorHandler(sendError);

  return app;
}

/** What node:http meets before a request exists, by the code it answers with. */
const CLIENT_ERRORS: Record<string, ErrorCode> = {
  HPE_HEADER_OVERFLOW: 'HEADERS_TOO_LARGE',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 'PAYLOAD_TOO_LARGE',
  ERR_HTTP_REQUEST_TIMEOUT: 'REQUEST_TIMEOUT',
};

/**
 * Malformed HTTP, headers over the limit or a request too slow to arrive fail in node:http before
 * there is a request to reply to: the answer (the usual JSON body, `BAD_REQUEST` for any malformed
 * request) is written on the socket, which is then closed. A HEAD request gets the head alone when
 * the packet that failed begins with its request line; when that line came in an earlier packet,
 * the method is unknown and the body is sent.
 */
function answerClientError(log: FastifyBaseLogger, error: ConnectionError, socket: Socket): void {
  // As node:http does: nothing to write once the connection is gone or an answer has begun on it.
  const answering = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage?.headersSent === true;
  if (error.code === 'ECONNRESET' || !socket.writable || answering) {
    socket.destroy();
    return;
  }
  const code = CLIENT_ERRORS[error.code ?? ''] ?? 'BAD_REQUEST';
  const [statusCode, message] = ERROR_CODES[code];
  const body = JSON.stringify(errorBody(statusCode, code, message));
  // Typed as JSON by Fastify, a Buffer in fact.
  const packet: unknown = error.rawPacket;
  const isHead = Buffer.isBuffer(packet) && packet.subarray(0, 5).toString('latin1') === 'HEAD ';
  const head = [
    `HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode]}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    ...Object.entries(PRIVATE_ANSWER_HEADERS).map(([name, value]) => `${name}: ${value}`),
    'connection: close',
  ];
  log.debug({ err: error }, 'malformed request answered on the socket');
  socket.write(`${head.join('\r\n')}\r\n\r\n${isHead ? '' : body}`);
  socket.destroySoon();
}

/** A body the JSON parser built, as opposed to a raw Buffer or stream a route parses itself. */
function isParsedJson(body: unknown): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const prototype = Object.getPrototypeOf(body) as unknown;
  return Array.isArray(body) || prototype === Object.prototype || prototype === null;
}

function sendError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const { statusCode, code, message, details, headers } = toClientError(error);
  if (statusCode >= 500) request.log.error({ err: error }, 'request failed');
  if (headers) reply.headers(headers);
  reply.code(statusCode).send(errorBody(statusCode, code, message, details));
}

interface ClientError {
  statusCode: number;
  code: ErrorCode;
  message: string;
  details?: ErrorDetail[];
  headers?: Record<string, string>;
}

function toClientError(error: FastifyError): ClientError {
  if (error instanceof AppError) {
    return { statusCode: error.statusCode, code: error.code, message: error.message, details: error.details, headers: error.headers };
  }
  if (error.validation) {
    const part = error.validationContext ?? 'body';
    const details = error.validation.map((issue) => {
      const missing = (issue.params as { missingProperty?: string } | undefined)?.missingProperty;
      const extra = (issue.params as { additionalProperty?: string } | undefined)?.additionalProperty;
      const field = missing ?? extra;
      const pathInPart = `${issue.instancePath}${field ? `/${field}` : ''}`;
      const message = extra ? `unknown property '${extra}'` : (issue.message ?? 'is invalid');
      return { path: `/${part === 'querystring' ? 'query' : part}${pathInPart}`, message };
    });
    const first = details[0];
    return {
      statusCode: 400,
      code: 'VALIDATION_FAILED',
      message: first ? `${first.path} ${first.message}` : 'The request is invalid',
      details,
    };
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { statusCode: 400, code: 'MALFORMED_JSON', message: error.message };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { statusCode: 413, code: 'PAYLOAD_TOO_LARGE', message: 'The request body is too large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { statusCode: 415, code: 'UNSUPPORTED_MEDIA_TYPE', message: error.message };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { statusCode: 414, code: 'URI_TOO_LONG', message: 'A path parameter is longer than 1024 characters' };
    case 'FST_ERR_BAD_URL':
      return { statusCode: 400, code: 'BAD_REQUEST', message: 'The path holds a malformed percent-escape' };
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) return { statusCode: status, code: 'BAD_REQUEST', message: error.message };
  return { statusCode: 500, code: 'INTERNAL_ERROR', message: 'Internal server error' };
}

/** The JSON error body (DESIGN §5.1): `error` is the status's HTTP reason phrase, as Node names it. */
export function errorBody(statusCode: number, code: ErrorCode, message: string, details?: ErrorDetail[]) {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Unknown Status', code, message, ...(details ? { details } : {}) };
}
