import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { checkMapStyle } from '../../src/gateway/map-style-check.ts';

/** A style and tile server: `/style.json` names tiles on this server; `/missing-tiles.json` names tiles that answer 404; `/slow.json` never answers. */
describe('the startup check of MAP_STYLE_URL', () => {
  let server: http.Server;
  let base: string;
  const asked: string[] = [];

  before(async () => {
    server = http.createServer((request, response) => {
      asked.push(request.url ?? '');
      const style = (tiles: string) => JSON.stringify({ version: 8, sources: { base: { type: 'raster', tiles: [tiles] } }, layers: [] });
      if (request.url === '/style.json') return response.end(style('/tiles/{z}/{x}/{y}.png'));
      if (request.url === '/tilejson-style.json') return response.end(JSON.stringify({ version: 8, sources: { base: { type: 'vector', url: '/tiles.json' } }, layers: [] }));
      if (request.url === '/tiles.json') return response.end(JSON.stringify({ tiles: ['/tiles/{z}/{x}/{y}.pbf'] }));
      if (request.url === '/missing-tiles.json') return response.end(style('/gone/{z}/{x}/{y}.png'));
      if (request.url === '/blank.json') return response.end(JSON.stringify({ version: 8, sources: {}, layers: [] }));
      if (request.url?.startsWith('/tiles/0/0/0')) return response.end('tile');
      if (request.url === '/slow.json') return;
      response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('reads the style and its first tile, as a path on this server or a full URL, through a TileJSON too', async () => {
    asked.length = 0;
    assert.deepEqual(await checkMapStyle('/style.json', base), { reachable: true, detail: 'reachable, tiles too' });
    assert.deepEqual(asked, ['/style.json', '/tiles/0/0/0.png']);
    assert.deepEqual(await checkMapStyle(`${base}/tilejson-style.json`, 'http://127.0.0.1:1'), { reachable: true, detail: 'reachable, tiles too' });
    assert.deepEqual(await checkMapStyle('/blank.json', base), { reachable: true, detail: 'reachable (no tiles)' });
  });

  it('says what is out of reach: the style, its tiles, or no answer within the timeout', async () => {
    assert.deepEqual(await checkMapStyle('/nothing.json', base), { reachable: false, detail: `NOT reachable: ${base}/nothing.json answered 404` });
    assert.deepEqual(await checkMapStyle('/missing-tiles.json', base), { reachable: false, detail: `style reachable, tiles NOT: ${base}/gone/0/0/0.png answered 404` });
    const started = Date.now();
    assert.deepEqual(await checkMapStyle('/slow.json', base, 300), { reachable: false, detail: 'NOT reachable: no answer in time' });
    assert.ok(Date.now() - started < 2000, 'the timeout holds');
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await checkMapStyle(`http://127.0.0.1:${closedPort}/style.json`, base);
    assert.equal(refused.reachable, false);
    assert.match(refused.detail, /^NOT reachable: fetch failed \(.*ECONNREFUSED/);
  });
});
