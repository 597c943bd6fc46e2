import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createHttpApp } from '../../../src/platform/http/app.ts';
import type { HttpApp } from '../../../src/platform/http/app.ts';

interface RawAnswer {
  statusLine: string;
  headers: Record<string, string>;
  /** Every byte after the head, until the server closed the connection. */
  body: string;
}

/** Writes `request` on a fresh TCP connection and reads the answer until the server closes it. */
function exchange(port: number, request: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      const end = received.indexOf('\r\n\r\n');
      const [statusLine = '', ...lines] = received.slice(0, end).split('\r\n');
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      resolve({ statusLine, headers, body: received.slice(end + 4) });
    });
  });
}

const OVERSIZED = `X-Filler: ${'a'.repeat(20_000)}\r\n`;

describe('HTTP platform: requests node:http refuses before they reach a route', () => {
  let app: HttpApp;
  let port: number;

  before(async () => {
    app = createHttpApp({ logLevel: 'silent', bodyLimit: 1024, trustProxy: undefined });
    app.get('/', async () => ({ ok: true }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });
  after(() => app.close());

  it('answers headers over the limit with 431 HEADERS_TOO_LARGE in the error body, and closes', async () => {
    const answer = await exchange(port, `GET / HTTP/1.1\r\nHost: x\r\n${OVERSIZED}\r\n`);
    assert.equal(answer.statusLine, 'HTTP/1.1 431 Request Header Fields Too Large');
    assert.equal(answer.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(answer.headers['connection'], 'close');
    assert.deepEqual(JSON.parse(answer.body), {
      statusCode: 431,
      error: 'Request Header Fields Too Large',
      code: 'HEADERS_TOO_LARGE',
      message: 'The request headers are too large',
    });
  });

  it('answers a HEAD request with headers over the limit with the 431 head alone', async () => {
    const answer = await exchange(port, `HEAD / HTTP/1.1\r\nHost: x\r\n${OVERSIZED}\r\n`);
    assert.equal(answer.statusLine, 'HTTP/1.1 431 Request Header Fields Too Large');
    assert.equal(answer.body, '');
  });

  it('answers a malformed request line with 400 BAD_REQUEST in the error body', async () => {
    for (const garbage of ['GARBAGE\r\n\r\n', 'GET / HTTP/9.x\r\n\r\n', 'GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n']) {
      const answer = await exchange(port, garbage);
      assert.equal(answer.statusLine, 'HTTP/1.1 400 Bad Request', JSON.stringify(garbage));
      const body = JSON.parse(answer.body);
      assert.equal(body.statusCode, 400);
      assert.equal(body.code, 'BAD_REQUEST');
    }
  });

  it('answers a request that took too long to arrive with 408 REQUEST_TIMEOUT', async () => {
    // node:http raises this after headersTimeout (a minute); the server's own clientError path is driven here.
    const serverSide = new Promise<Socket>((resolve) => app.server.once('connection', resolve));
    const answer = new Promise<RawAnswer>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
      socket.on('error', reject);
      socket.on('close', () => resolve({ statusLine: received.split('\r\n')[0] ?? '', headers: {}, body: received.slice(received.indexOf('\r\n\r\n') + 4) }));
    });
    app.server.emit('clientError', Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), await serverSide);
    const { statusLine, body } = await answer;
    assert.equal(statusLine, 'HTTP/1.1 408 Request Timeout');
    assert.equal(JSON.parse(body).code, 'REQUEST_TIMEOUT');
  });

  it('still answers well-formed requests on other connections', async () => {
    const answer = await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.equal(answer.statusLine, 'HTTP/1.1 200 OK');
    assert.deepEqual(JSON.parse(answer.body), { ok: true });
  });
});
