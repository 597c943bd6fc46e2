import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { createHttpApp } from '../../../src/platform/http/app.ts';
import type { HttpApp } from '../../../src/platform/http/app.ts';
import { AppError, ERROR_CODES } from '../../../src/platform/http/errors.ts';
import type { ErrorCode } from '../../../src/platform/http/errors.ts';

const servicesDir = path.resolve(import.meta.dirname, '../../../src/services');

/** Codes a route answers with another status than their table's (docs/errors.md names them). */
const OTHER_STATUSES: readonly [ErrorCode, number][] = [['INVALID_TOKEN', 400]];

describe('error bodies: the reason phrase of every status the product answers with', () => {
  let app: HttpApp;

  before(async () => {
    for (const module of readdirSync(servicesDir)) {
      const table = path.join(servicesDir, module, 'errors.ts');
      if (existsSync(table)) await import(pathToFileURL(table).href);
    }
    app = createHttpApp({ logLevel: 'silent', bodyLimit: 1024, trustProxy: undefined });
    // Raises the code the way a route does; the one error handler writes the body.
    app.get<{ Params: { code: string }; Querystring: { status?: string } }>('/raise/:code', async (request) => {
      const status = request.query.status === undefined ? undefined : Number(request.query.status);
      throw new AppError(request.params.code as ErrorCode, undefined, status === undefined ? undefined : { statusCode: status });
    });
    app.post('/echo', async (request) => request.body);
    await app.ready();
  });
  after(() => app.close());

  it('every declared code, and every code answered with another status, carries http.STATUS_CODES[status] as its error', async () => {
    const cases: [string, number, number | undefined][] = [
      ...Object.entries(ERROR_CODES).map(([code, [status]]): [string, number, undefined] => [code, status, undefined]),
      ...OTHER_STATUSES.map(([code, status]): [string, number, number] => [code, status, status]),
    ];
    assert.ok(cases.length > 80, `${cases.length} codes: every module's table is loaded`);
    assert.ok(cases.some(([code, status]) => code === 'PLAN_LIMIT_REACHED' && status === 402));
    for (const [code, status, override] of cases) {
      const response = await app.inject({ url: `/raise/${code}${override === undefined ? '' : `?status=${override}`}` });
      assert.equal(response.statusCode, status, code);
      const body = response.json();
      assert.ok(STATUS_CODES[status], `${status} is an HTTP status Node knows`);
      assert.deepEqual([body.statusCode, body.error, body.code], [status, STATUS_CODES[status], code], code);
    }
  });

  it('the answers made outside a route say the same: an unknown route, a malformed or oversized body, a wrong type', async () => {
    const answers = await Promise.all([
      app.inject({ url: '/nowhere' }),
      app.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'application/json' }, payload: '{"a":' }),
      app.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ a: 'x'.repeat(2048) }) }),
      app.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'application/xml' }, payload: '<a/>' }),
    ]);
    assert.deepEqual(
      answers.map((response) => [response.statusCode, response.json().error, response.json().code]),
      [[404, 'Not Found', 'NOT_FOUND'], [400, 'Bad Request', 'MALFORMED_JSON'], [413, 'Payload Too Large', 'PAYLOAD_TOO_LARGE'], [415, 'Unsupported Media Type', 'UNSUPPORTED_MEDIA_TYPE']],
    );
  });
});
