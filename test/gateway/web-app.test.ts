import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { installWebApp } from '../../src/gateway/web-app.ts';
import { createHttpApp } from '../../src/platform/http/app.ts';
import type { HttpApp } from '../../src/platform/http/app.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { testEngines } from '../support/engines.ts';

const INDEX = '<!doctype html><html><head><!--trackstack-settings--></head><body><script type="module" src="/assets/index-abc123.js"></script></body></html>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});`;

/** A build as Vite lays it out: index.html, hashed assets, public files. */
function fakeBuild(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'trackstack-web-'));
  mkdirSync(path.join(dir, 'assets'));
  mkdirSync(path.join(dir, 'map-styles'));
  writeFileSync(path.join(dir, 'index.html'), INDEX);
  writeFileSync(path.join(dir, 'assets/index-abc123.js'), SCRIPT);
  writeFileSync(path.join(dir, 'assets/maplibre-gl-worker-abc.mjs'), 'self.onmessage = () => {};');
  writeFileSync(path.join(dir, 'map-styles/blank.json'), '{"version":8,"sources":{},"layers":[]}');
  return dir;
}

function app(env: Record<string, string>, dir: string | undefined, overrides: { mapStyleUrl?: string } = {}): HttpApp {
  const web = createHttpApp({ logLevel: 'silent', bodyLimit: 1_048_576, trustProxy: undefined });
  installWebApp(web, { ...loadConfig({ DATA_DIR: tmpdir(), ...env }), ...overrides }, dir ?? path.join(tmpdir(), 'no-such-build'));
  return web;
}

describe('web app served by the gateway', () => {
  let dir: string;
  let web: HttpApp;

  before(async () => {
    dir = fakeBuild();
    // The configuration refuses < in MAP_STYLE_URL; the page escapes it all the same.
    web = app({ OIDC_GOOGLE_CLIENT_ID: 'id', OIDC_GOOGLE_CLIENT_SECRET: 'secret', REGISTRATION_ENABLED: 'false' }, dir, {
      mapStyleUrl: 'https://tiles.example.com/style.json</script><script>',
    });
    await web.ready();
  });
  after(async () => {
    await web.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves index.html, never stored, with the server settings embedded as JSON data that no value can break out of', async () => {
    const response = await web.inject({ url: '/' });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['cache-control'], 'no-store');
    assert.match(String(response.headers['content-type']), /^text\/html/);
    assert.match(String(response.headers['content-security-policy']), /script-src 'self';/);
    assert.equal(response.headers['referrer-policy'], 'no-referrer');
    const embedded = /<script id="trackstack-settings" type="application\/json">(.*?)<\/script>/.exec(response.body)?.[1];
    assert.ok(embedded, response.body);
    assert.ok(!embedded.includes('<'), 'a < in a value is escaped');
    assert.deepEqual(JSON.parse(embedded), {
      mapStyleUrl: 'https://tiles.example.com/style.json</script><script>',
      socialProviders: ['google'],
      registrationEnabled: false,
    });
  });

  it("answers the app's own paths with index.html, so mail links and social-login landings load the app", async () => {
    for (const url of ['/verify-email?token=abc', '/reset-password?token=abc', '/login/2fa?token=t&type=totp', '/devices/7/history', '/?openid=success']) {
      const response = await web.inject({ url });
      assert.equal(response.statusCode, 200, url);
      assert.equal(response.headers['cache-control'], 'no-store', url);
      assert.match(response.body, /trackstack-settings/, url);
    }
  });

  it('serves hashed assets for a year, gzipped when the browser accepts it, and modules as JavaScript', async () => {
    const plain = await web.inject({ url: '/assets/index-abc123.js' });
    assert.equal(plain.statusCode, 200);
    assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.match(String(plain.headers['content-type']), /^text\/javascript/);
    assert.equal(plain.body, SCRIPT);
    const gzipped = await web.inject({ url: '/assets/index-abc123.js', headers: { 'accept-encoding': 'gzip, br' } });
    assert.equal(gzipped.headers['content-encoding'], 'gzip');
    assert.equal(gunzipSync(gzipped.rawPayload).toString(), SCRIPT);
    const worker = await web.inject({ url: '/assets/maplibre-gl-worker-abc.mjs' });
    assert.match(String(worker.headers['content-type']), /^text\/javascript/);
    const style = await web.inject({ url: '/map-styles/blank.json' });
    assert.equal(style.headers['cache-control'], 'no-cache');
  });

  it('answers a missing asset or file with 404 JSON, not the page', async () => {
    for (const url of ['/assets/index-gone.js', '/favicon.ico', '/assets/../index.html.bak']) {
      const response = await web.inject({ url });
      assert.equal(response.statusCode, 404, url);
      assert.equal(response.json().code, 'NOT_FOUND', url);
    }
  });

  it('leaves /api, /webhooks and /docs to the API: unknown paths there are 404 JSON', async () => {
    for (const url of ['/api', '/api/nothing-here', '/webhooks/unknown', '/docs/nothing', '/api/devices/1/nothing']) {
      const response = await web.inject({ url });
      assert.equal(response.statusCode, 404, url);
      assert.equal(response.json().code, 'NOT_FOUND', url);
    }
  });

  it('without a build, says how to build at / and keeps the API answers', async () => {
    const unbuilt = app({}, undefined);
    await unbuilt.ready();
    const response = await unbuilt.inject({ url: '/' });
    assert.equal(response.statusCode, 503);
    assert.match(response.body, /npm run build:web/);
    assert.equal((await unbuilt.inject({ url: '/api/nothing' })).json().code, 'NOT_FOUND');
    await unbuilt.close();
  });
});

describe('web app beside the API in the all-in-one server', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(testEngines()[0]!);
  });
  after(() => server.dispose());

  it('keeps every API route and the API docs answering as before', async () => {
    assert.equal((await server.app.inject({ url: '/api/auth/health' })).statusCode, 200);
    assert.equal((await server.app.inject({ url: '/openapi.json' })).statusCode, 200);
    assert.equal((await server.app.inject({ url: '/api/devices' })).json().code, 'UNAUTHORIZED');
    const spec = (await server.app.inject({ url: '/openapi.json' })).json();
    assert.ok(!Object.keys(spec.paths).some((route) => route === '/' || route === '/*'), 'the web app is not part of the API document');
  });
});
