import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import { AppError } from '../../../src/platform/http/errors.ts';
import { InternalClient } from '../../../src/platform/http/internal-client.ts';
import { freePort } from '../../support/ports.ts';

const TOKEN = 'internal-client-test-token-0123456789';

interface Seen {
  method: string;
  url: string;
  token: string | undefined;
  body: string;
}

describe('the internal HTTP client between services', () => {
  let server: Server;
  let baseUrl: string;
  let seen: Seen[] = [];
  let answer: (request: IncomingMessage, response: ServerResponse, attempt: number) => void;
  const clients: InternalClient[] = [];
  const client = (options: { timeoutMs?: number; retries?: number; baseUrl?: string } = {}) => {
    const made = new InternalClient({ baseUrl, internalToken: TOKEN, service: 'devices', retryDelayMs: 1, ...options });
    clients.push(made);
    return made;
  };
  const json = (response: ServerResponse, status: number, body: unknown) =>
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

  before(async () => {
    // A service that records every request and answers as the test's `answer` says.
    server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        seen.push({ method: request.method ?? '', url: request.url ?? '', token: request.headers['x-internal-token'] as string | undefined, body });
        answer(request, response, seen.length);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterEach(() => {
    seen = [];
  });
  after(async () => {
    await Promise.all(clients.map((made) => made.close()));
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const unavailable = (message: RegExp) => (error: unknown) => {
    assert.ok(error instanceof AppError, String(error));
    assert.equal(error.code, 'UPSTREAM_UNAVAILABLE');
    assert.equal(error.statusCode, 502);
    assert.match(error.message, message);
    return true;
  };

  it('sends the internal token and a JSON body, and answers the JSON of a 200', async () => {
    answer = (_request, response) => json(response, 200, { ok: true });
    assert.deepEqual(await client().json('/api/thing', { method: 'PUT', body: { ids: [1, 2] } }), { ok: true });
    assert.deepEqual(seen, [{ method: 'PUT', url: '/api/thing', token: TOKEN, body: '{"ids":[1,2]}' }]);
  });

  it('answers undefined for 404 where asked, and refuses any other status without retrying it', async () => {
    answer = (_request, response) => json(response, 404, { code: 'NOT_FOUND' });
    assert.equal(await client().jsonOrNone('/api/missing'), undefined);
    await assert.rejects(client().json('/api/missing'), unavailable(/^The devices service answered HTTP 404$/));
    answer = (_request, response) => json(response, 403, { code: 'FORBIDDEN' });
    await assert.rejects(client().jsonOrNone('/api/forbidden'), unavailable(/HTTP 403/));
    assert.equal(seen.length, 3, 'one request each');
  });

  it('retries 502, 503 and 504 and answers once the service does', async () => {
    answer = (_request, response, attempt) => (attempt < 3 ? json(response, [502, 503][attempt - 1] as number, {}) : json(response, 200, [7]));
    assert.deepEqual(await client({ retries: 2 }).json('/api/flaky'), [7]);
    assert.equal(seen.length, 3);
  });

  it('gives up after its retries', async () => {
    answer = (_request, response) => json(response, 504, {});
    await assert.rejects(client({ retries: 2 }).json('/api/down'), unavailable(/HTTP 504/));
    assert.equal(seen.length, 3, 'the first attempt and two retries');
    seen = [];
    await assert.rejects(client({ retries: 2 }).json('/api/down', { retries: 0 }), unavailable(/HTTP 504/));
    assert.equal(seen.length, 1, 'a call may ask for fewer');
  });

  it('abandons an attempt that gets no answer within the timeout, and retries it', async () => {
    answer = () => {}; // never answers
    await assert.rejects(client({ timeoutMs: 50, retries: 1 }).json('/api/slow'), unavailable(/could not be reached \(UND_ERR_HEADERS_TIMEOUT\)/));
    assert.equal(seen.length, 2);
  });

  it('is a 502 when nothing listens at the URL', async () => {
    const nobody = client({ baseUrl: `http://127.0.0.1:${await freePort()}`, retries: 1 });
    await assert.rejects(nobody.json('/api/anything'), unavailable(/could not be reached \(ECONNREFUSED\)/));
  });

  it('refuses a 200 whose body is not JSON', async () => {
    answer = (_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<html>');
    await assert.rejects(client().json('/api/html'), unavailable(/not JSON/));
    assert.equal(seen.length, 1);
  });
});
