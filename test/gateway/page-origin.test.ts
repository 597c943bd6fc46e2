import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, afterEach, before, it } from 'node:test';
import { assertError } from '../support/api.ts';
import { describeEachEngine } from '../support/engines.ts';
import { startTestServer } from '../support/server.ts';
import type { TestLogin, TestServer } from '../support/server.ts';
import { LiveClient, refusal } from '../services/tracking/live/support.ts';
import type { LiveMessage } from '../services/tracking/live/support.ts';

/**
 * A page is same-origin with the server under any of its host names: `npm start` prints
 * http://127.0.0.1:8080/ while PUBLIC_URL defaults to http://localhost:8080. The cookie opens the
 * socket and changes state from a page whose Origin is the request's own scheme and Host, or
 * PUBLIC_URL's or WEB_URL's; never from a page of another site.
 */
describeEachEngine('the session cookie from pages of this server under any of its names', (engine) => {
  const PUBLIC_URL = 'http://localhost:8080';
  const WEB_URL = 'https://app.example.com';
  let server: TestServer;
  let port: number;
  let owner: TestLogin;
  let open: LiveClient[] = [];
  /** Sites other than this server's, as a browser names them; `port` is known only once it listens. */
  let foreignOrigins: string[];

  const cookie = () => ({ cookie: `access_token=${owner.token}` });
  const uniqueIds = async () => {
    const listed = await server.app.inject({ url: '/api/devices/', headers: owner.authorization });
    return (listed.json() as { uniqueId: string }[]).map((device) => device.uniqueId).sort();
  };
  const createDevice = (uniqueId: string, headers: Record<string, string>) =>
    server.app.inject({ method: 'POST', url: '/api/devices/', headers: { 'content-type': 'application/json', ...headers }, payload: { name: uniqueId, uniqueId } });

  async function openSocket(host: string, headers: Record<string, string>): Promise<LiveClient> {
    const client = await LiveClient.open(`ws://${host}:${port}/api/socket`, { headers });
    open.push(client);
    return client;
  }

  before(async () => {
    server = await startTestServer(engine, { PUBLIC_URL, WEB_URL, TRUST_PROXY: '127.0.0.1' });
    await server.app.listen({ port: 0, host: '127.0.0.1' });
    port = (server.app.server.address() as AddressInfo).port;
    owner = await server.login({ email: 'page-origin@example.com' });
    foreignOrigins = [
      'https://evil.example',
      // Another program on this machine: same host, another port. The cookie is the host's, whatever the port.
      `http://127.0.0.1:${port + 1}`,
      // Same host and port, another scheme.
      `https://127.0.0.1:${port}`,
      `http://127.0.0.1:${port}.evil.example`,
      'http://localhost:8081',
      'null',
    ];
  });
  afterEach(async () => {
    for (const client of open) client.close();
    await Promise.all(open.map((client) => client.closed));
    open = [];
  });
  after(() => server.dispose());

  it('opens the live socket with the cookie from a page at the address the server was reached at', async () => {
    const at127 = await openSocket('127.0.0.1', { ...cookie(), origin: `http://127.0.0.1:${port}` });
    assert.deepEqual(await at127.next() as LiveMessage, { positions: [] });
    // The same server reached as localhost, on a port PUBLIC_URL does not name.
    const atLocalhost = await openSocket('127.0.0.1', { ...cookie(), host: `localhost:${port}`, origin: `http://localhost:${port}` });
    assert.deepEqual(await atLocalhost.next() as LiveMessage, { positions: [] });
    for (const configured of [PUBLIC_URL, WEB_URL]) {
      const client = await openSocket('127.0.0.1', { ...cookie(), origin: configured });
      assert.deepEqual(await client.next() as LiveMessage, { positions: [] }, configured);
    }
  });

  it('refuses the live socket with the cookie to a page of any other site (403 FORBIDDEN)', async () => {
    for (const origin of foreignOrigins) {
      const refused = await refusal(`ws://127.0.0.1:${port}/api/socket`, { headers: { ...cookie(), origin } });
      assert.equal(refused.status, 403, origin);
      assert.equal(refused.body.code, 'FORBIDDEN', origin);
    }
    // A page cannot forge a bearer header: any origin may use one.
    const withBearer = await openSocket('127.0.0.1', { ...owner.authorization, origin: 'https://evil.example' });
    assert.deepEqual(await withBearer.next() as LiveMessage, { positions: [] });
  });

  it('takes a cookie-authenticated change from a page at the address the server was reached at, or at PUBLIC_URL or WEB_URL', async () => {
    const before = await uniqueIds();
    const fromOwnHost = await createDevice('origin-own-host', { ...cookie(), host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` });
    assert.equal(fromOwnHost.statusCode, 201, fromOwnHost.body);
    const fromLocalhost = await createDevice('origin-localhost', { ...cookie(), host: `localhost:${port}`, origin: `http://localhost:${port}` });
    assert.equal(fromLocalhost.statusCode, 201, fromLocalhost.body);
    const fromPublicUrl = await createDevice('origin-public-url', { ...cookie(), host: `127.0.0.1:${port}`, origin: PUBLIC_URL });
    assert.equal(fromPublicUrl.statusCode, 201, fromPublicUrl.body);
    // Apps and scripts send no Origin: no page of another site is behind them.
    const withoutOrigin = await createDevice('origin-none', cookie());
    assert.equal(withoutOrigin.statusCode, 201, withoutOrigin.body);
    assert.deepEqual(await uniqueIds(), [...before, 'origin-localhost', 'origin-none', 'origin-own-host', 'origin-public-url'].sort());
  });

  it('refuses a cookie-authenticated change from a page of any other site (403 FORBIDDEN), and changes nothing', async () => {
    const before = await uniqueIds();
    for (const [index, origin] of foreignOrigins.entries()) {
      const refused = await createDevice(`origin-foreign-${index}`, { ...cookie(), host: `127.0.0.1:${port}`, origin });
      assertError(refused, 403, 'FORBIDDEN', /other sites/);
    }
    const removed = await server.app.inject({ method: 'DELETE', url: '/api/devices/1', headers: { ...cookie(), origin: 'https://evil.example', 'content-type': 'application/json' }, payload: {} });
    assertError(removed, 403, 'FORBIDDEN');
    assert.deepEqual(await uniqueIds(), before);
    // Reading stays open to the cookie: CORS keeps the answer from the other site's page.
    const read = await server.app.inject({ url: '/api/devices/', headers: { ...cookie(), origin: 'https://evil.example' } });
    assert.equal(read.statusCode, 200);
    // A bearer header no page can forge.
    const withBearer = await createDevice('origin-foreign-bearer', { ...owner.authorization, origin: 'https://evil.example' });
    assert.equal(withBearer.statusCode, 201, withBearer.body);
  });

  it('reads the host a trusted proxy forwards, and only from it', async () => {
    const proxied = { ...cookie(), host: `127.0.0.1:${port}`, 'x-forwarded-host': 'tracker.example.com', 'x-forwarded-proto': 'https', origin: 'https://tracker.example.com' };
    const fromProxy = await createDevice('origin-proxied', proxied);
    assert.equal(fromProxy.statusCode, 201, fromProxy.body);
    const notFromProxy = await server.app.inject({
      method: 'POST',
      url: '/api/devices/',
      remoteAddress: '10.0.0.9',
      headers: { ...proxied, 'content-type': 'application/json' },
      payload: { name: 'x', uniqueId: 'origin-forged-forward' },
    });
    assertError(notFromProxy, 403, 'FORBIDDEN');
    assert.ok(!(await uniqueIds()).includes('origin-forged-forward'));
  });
});
