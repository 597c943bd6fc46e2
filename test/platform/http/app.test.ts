import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { Type } from 'typebox';
import { createHttpApp } from '../../../src/platform/http/app.ts';
import type { HttpApp } from '../../../src/platform/http/app.ts';
import { AppError } from '../../../src/platform/http/errors.ts';

describe('HTTP platform: the error contract', () => {
  let app: HttpApp;
  const logLines: Record<string, unknown>[] = [];

  before(async () => {
    const logStream = new Writable({
      write(chunk, _encoding, done) {
        logLines.push(JSON.parse(chunk.toString()));
        done();
      },
    });
    app = createHttpApp({ logLevel: 'info', bodyLimit: 1024, trustProxy: undefined, logStream });
    app.post(
      '/things',
      {
        schema: {
          body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 10 }), count: Type.Integer() }, { additionalProperties: false }),
          querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1 })) }),
        },
      },
      async (request) => ({ received: request.body, limit: request.query.limit ?? null }),
    );
    app.post(
      '/notes/:topic',
      {
        schema: {
          params: Type.Object({ topic: Type.String() }),
          querystring: Type.Object({ tag: Type.Optional(Type.Array(Type.String())) }),
          body: Type.Object({ lines: Type.Array(Type.Union([Type.String(), Type.Null()])), meta: Type.Object({}, { additionalProperties: true }) }),
        },
      },
      async (request) => ({ topic: request.params.topic, lines: request.body.lines }),
    );
    app.get('/conflict', async () => {
      throw new AppError('LIMIT_REACHED');
    });
    app.get('/broken', async () => {
      throw new Error('secret internal detail: password=hunter2');
    });
    app.get('/public', async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return { public: true };
    });
    app.get('/slow', async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      return { done: true };
    });
    await app.ready();
  });
  after(() => app.close());

  const post = (payload: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    app.inject({ method: 'POST', url: '/things', payload, headers });

  it('answers a valid request and coerces query numbers', async () => {
    const response = await app.inject({ method: 'POST', url: '/things?limit=5', payload: { name: 'a', count: 2 } });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { received: { name: 'a', count: 2 }, limit: 5 });
  });

  it('turns schema failures into 400 VALIDATION_FAILED with details', async () => {
    const response = await post(JSON.stringify({ count: 1 }));
    assert.equal(response.statusCode, 400);
    const body = response.json();
    assert.equal(body.code, 'VALIDATION_FAILED');
    assert.equal(body.error, 'Bad Request');
    assert.equal(body.statusCode, 400);
    assert.deepEqual(body.details[0].path, '/body/name');
  });

  it('never coerces body types', async () => {
    const response = await post(JSON.stringify({ name: 123, count: '2' }));
    assert.equal(response.statusCode, 400);
    assert.equal(response.json().code, 'VALIDATION_FAILED');
  });

  it('refuses unknown body fields', async () => {
    const response = await post(JSON.stringify({ name: 'a', count: 1, admin: true }));
    assert.equal(response.statusCode, 400);
    assert.equal(response.json().details[0].path, '/body/admin');
  });

  it('refuses oversized strings and bad query values', async () => {
    assert.equal((await post(JSON.stringify({ name: 'x'.repeat(11), count: 1 }))).json().code, 'VALIDATION_FAILED');
    const query = await app.inject({ method: 'POST', url: '/things?limit=abc', payload: { name: 'a', count: 1 } });
    assert.equal(query.statusCode, 400);
    assert.equal(query.json().details[0].path, '/query/limit');
  });

  it('refuses a NUL character in any string, however nested, and in the query and path; free-form objects keep theirs', async () => {
    const note = (url: string, payload: object) => app.inject({ method: 'POST', url, payload });
    const refusals: [string, object, string][] = [
      ['/notes/a', { lines: ['fine', 'not\u0000fine'], meta: {} }, '/body/lines/1'],
      ['/notes/a%00b', { lines: [], meta: {} }, '/params/topic'],
      ['/notes/a?tag=x&tag=%00', { lines: [], meta: {} }, '/query/tag/1'],
    ];
    for (const [url, payload, path] of refusals) {
      const response = await note(url, payload);
      assert.equal(response.statusCode, 400, url);
      assert.equal(response.json().code, 'VALIDATION_FAILED');
      assert.deepEqual(response.json().details[0], { path, message: 'must not contain a NUL character' });
    }
    const accepted = await note('/notes/a', { lines: ['fine', null], meta: { note: 'kept\u0000as data' } });
    assert.equal(accepted.statusCode, 200, accepted.body);
  });

  it('answers what the router refuses in the path with the standard error, request id and private headers', async () => {
    const cases: [string, number, string][] = [
      ['/notes/%FF', 400, 'BAD_REQUEST'],
      ['/notes/%ED%A0%80', 400, 'BAD_REQUEST'],
      [`/notes/${'a'.repeat(1025)}`, 414, 'URI_TOO_LONG'],
    ];
    for (const [url, status, code] of cases) {
      const response = await app.inject({ method: 'POST', url, payload: { lines: [], meta: {} }, headers: { 'x-request-id': 'router-refusal-1' } });
      assert.equal(response.statusCode, status, url);
      assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
      assert.equal(response.json().code, code);
      assert.equal(response.json().statusCode, status);
      assert.equal(response.headers['x-request-id'], 'router-refusal-1');
      assert.equal(response.headers['cache-control'], 'no-store');
      assert.equal(response.headers['x-content-type-options'], 'nosniff');
    }
    const longest = await app.inject({ method: 'POST', url: `/notes/${'a'.repeat(1024)}`, payload: { lines: [], meta: {} } });
    assert.equal(longest.statusCode, 200);
  });

  it('answers malformed JSON with 400, never 500', async () => {
    const response = await post('{"name": "a",');
    assert.equal(response.statusCode, 400);
    assert.equal(response.json().code, 'MALFORMED_JSON');
  });

  it('enforces the body size limit with 413', async () => {
    const response = await post(JSON.stringify({ name: 'a', count: 1, pad: 'x'.repeat(2000) }));
    assert.equal(response.statusCode, 413);
    assert.equal(response.json().code, 'PAYLOAD_TOO_LARGE');
  });

  it('answers unsupported content types with 415', async () => {
    const response = await post('name=a', { 'content-type': 'application/x-www-form-urlencoded' });
    assert.equal(response.statusCode, 415);
    assert.equal(response.json().code, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers unknown routes with 404 JSON', async () => {
    const response = await app.inject({ method: 'GET', url: '/nowhere?x=1' });
    assert.equal(response.statusCode, 404);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(response.json(), { statusCode: 404, error: 'Not Found', code: 'NOT_FOUND', message: 'Route GET /nowhere not found' });
  });

  it('renders AppError with its status and stable code', async () => {
    const response = await app.inject({ method: 'GET', url: '/conflict' });
    assert.equal(response.statusCode, 409);
    assert.deepEqual(response.json(), {
      statusCode: 409,
      error: 'Conflict',
      code: 'LIMIT_REACHED',
      message: 'A server limit is reached',
    });
  });

  it('hides internals of unexpected errors', async () => {
    const response = await app.inject({ method: 'GET', url: '/broken' });
    assert.equal(response.statusCode, 500);
    assert.deepEqual(response.json(), { statusCode: 500, error: 'Internal Server Error', code: 'INTERNAL_ERROR', message: 'Internal server error' });
    assert.doesNotMatch(response.body, /hunter2/);
    const logged = logLines.find((line) => line.reqId === response.headers['x-request-id'] && line.level === 50);
    assert.ok(logged, 'the failure is logged with the request id');
    assert.match(JSON.stringify(logged), /secret internal detail/);
  });

  it('never logs credentials from headers or the query string', async () => {
    logLines.length = 0;
    await app.inject({ method: 'GET', url: '/slow?token=abc123&x=1', headers: { authorization: 'Bearer sekrit', cookie: 'access_token=sekrit2' } });
    const text = JSON.stringify(logLines);
    assert.ok(logLines.length > 0);
    assert.doesNotMatch(text, /abc123|sekrit/);
    assert.match(text, /token=\[redacted\]&x=1/);
  });

  it('sets X-Request-Id on every response and keeps a sane incoming one', async () => {
    const generated = await app.inject({ method: 'GET', url: '/nowhere' });
    assert.match(String(generated.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    const kept = await app.inject({ method: 'GET', url: '/slow', headers: { 'x-request-id': 'edge-123' } });
    assert.equal(kept.headers['x-request-id'], 'edge-123');
    const replaced = await app.inject({ method: 'GET', url: '/slow', headers: { 'x-request-id': 'bad id with spaces' } });
    assert.notEqual(replaced.headers['x-request-id'], 'bad id with spaces');
  });

  it('keeps answers out of caches and from being sniffed, unless a route makes itself public', async () => {
    for (const url of ['/slow', '/conflict', '/broken', '/nowhere']) {
      const response = await app.inject({ method: 'GET', url });
      assert.equal(response.headers['cache-control'], 'no-store', url);
      assert.equal(response.headers['x-content-type-options'], 'nosniff', url);
    }
    const invalid = await post('{"name": 1}');
    assert.equal(invalid.headers['cache-control'], 'no-store');
    const published = await app.inject({ method: 'GET', url: '/public' });
    assert.equal(published.headers['cache-control'], 'public, max-age=300');
  });
});
