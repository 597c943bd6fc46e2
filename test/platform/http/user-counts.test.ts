import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { InternalClient } from '../../../src/platform/http/internal-client.ts';
import { remoteUserCounts } from '../../../src/platform/http/user-counts.ts';

describe('counts of a module in another process', () => {
  const paths: string[] = [];
  let answer: unknown = { devices: 3, shares: 1 };
  let server: http.Server;
  let client: InternalClient;

  before(async () => {
    server = http.createServer((request, response) => {
      paths.push(request.url ?? '');
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(answer));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    client = new InternalClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, internalToken: 'token', service: 'devices', retries: 0 });
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('reads every count of a user asked for together in one request, and asks again later', async () => {
    const counts = remoteUserCounts(client, '/api/devices/internal/usage/:userId', ['devices', 'shares']);
    paths.length = 0;
    assert.deepEqual(await Promise.all([counts.devices(7), counts.shares(7)]), [3, 1]);
    assert.deepEqual(paths, ['/api/devices/internal/usage/7']);
    answer = { devices: 4, shares: 1 };
    assert.equal(await counts.devices(7), 4);
    assert.equal(paths.length, 2);
  });

  it('refuses an answer that is not counts, and a count the module does not give', async () => {
    const counts = remoteUserCounts(client, '/api/devices/internal/usage/:userId', ['devices', 'shares']);
    answer = { devices: -1 };
    await assert.rejects(counts.devices(7), /unexpected usage body/);
    answer = { devices: 2 };
    await assert.rejects(counts.shares(7), /does not count shares/);
  });
});
