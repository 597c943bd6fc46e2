import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, it } from 'node:test';
import { request } from 'undici';
import { loadConfig } from '../../src/config.ts';
import { osmAndQuery } from '../../src/services/tracking/protocols/osmand/simulator.ts';
import { teltonikaAvlPacket, teltonikaHandshake } from '../../src/services/tracking/protocols/teltonika/simulator.ts';
import { describeEachEngine } from '../support/engines.ts';
import { eventually } from '../support/eventually.ts';
import { sampleOf } from '../support/metrics.ts';
import { freePort } from '../support/ports.ts';
import { startTestServer } from '../support/server.ts';
import type { TestLogin, TestServer } from '../support/server.ts';
import { DeviceConnection, fixAt, registerDevice } from '../services/tracking/ingest/support.ts';

describeEachEngine('metrics: Prometheus text on a listener of its own', (engine) => {
  let server: TestServer;
  let port: number;
  let owner: TestLogin;
  let disposed = false;

  const scrape = async () => {
    const response = await request(`http://127.0.0.1:${port}/metrics`);
    return { status: response.statusCode, contentType: String(response.headers['content-type']), text: await response.body.text() };
  };

  before(async () => {
    port = await freePort();
    server = await startTestServer(engine, { METRICS_PORT: String(port) });
    owner = await server.login({ email: 'metrics-owner@example.com' });
  });
  after(async () => {
    if (!disposed) await server.dispose();
  });

  it('is off unless METRICS_PORT names a port, and listens on 127.0.0.1:9464 by default', async () => {
    assert.deepEqual(loadConfig({}).metrics, { port: 9464, host: '127.0.0.1' });
    assert.deepEqual(loadConfig({ METRICS_PORT: '0', METRICS_HOST: '::1' }).metrics, { port: 0, host: '::1' });
    assert.throws(() => loadConfig({ METRICS_PORT: '70000' }), /METRICS_PORT/);
    const quiet = await startTestServer(engine);
    try {
      assert.equal(quiet.metricsUrl, undefined);
    } finally {
      await quiet.dispose();
    }
  });

  it('serves the process metrics at /metrics there, and nothing through the gateway', async () => {
    assert.equal(server.metricsUrl, `http://127.0.0.1:${port}/metrics`);
    const { status, contentType, text } = await scrape();
    assert.equal(status, 200);
    assert.match(contentType, /^text\/plain; version=0\.0\.4/);
    assert.ok(sampleOf(text, 'process_cpu_user_seconds_total') > 0);
    assert.match(text, /^nodejs_eventloop_lag_seconds /m);
    // The gateway's /metrics is a web-app path like any other (the app, or 503 before it is built), never the metrics.
    const throughGateway = await server.app.inject({ url: '/metrics' });
    assert.doesNotMatch(throughGateway.body, /process_cpu_user_seconds_total|nodejs_eventloop_lag_seconds/);
    assert.equal((await request(`http://127.0.0.1:${port}/other`)).statusCode, 404);
  });

  it('times HTTP answers by route pattern, method and status class, never by the raw URL', async () => {
    const health = { route: '/api/devices/health', method: 'GET', status_class: '2xx' };
    const missingDevice = { route: '/api/devices/:id', method: 'GET', status_class: '4xx' };
    // The gateway's web-app catch-all matches every other path, so an unknown API path counts under its pattern.
    const unmatched = { route: '/*', method: 'GET', status_class: '4xx' };
    const before = (await scrape()).text;
    assert.equal((await server.app.inject({ url: '/api/devices/health' })).statusCode, 200);
    assert.equal((await server.app.inject({ url: '/api/devices/424242', headers: owner.authorization })).statusCode, 404);
    assert.equal((await server.app.inject({ url: '/api/no-such-thing/717171' })).statusCode, 404);
    const after = (await scrape()).text;
    for (const labels of [health, missingDevice, unmatched]) {
      assert.equal(sampleOf(after, 'http_request_duration_seconds_count', labels) - sampleOf(before, 'http_request_duration_seconds_count', labels), 1, JSON.stringify(labels));
    }
    assert.doesNotMatch(after, /424242|717171/);
  });

  it('counts position reports per protocol, unknown devices, and open device connections', async () => {
    assert.ok(server.tracking);
    const osmand = await server.tracking.ingestion.listen('osmand', 0);
    const teltonika = await server.tracking.ingestion.listen('teltonika', 0);
    const deviceId = await registerDevice(server, owner, '356307042449101');
    await registerDevice(server, owner, 'metrics-phone');
    const before = (await scrape()).text;
    const count = (text: string, protocol: string, outcome: string) => sampleOf(text, 'trackstack_ingest_positions_total', { protocol, outcome });

    assert.equal((await request(`http://127.0.0.1:${osmand}/?${osmAndQuery('metrics-phone', fixAt(0))}`)).statusCode, 200);
    assert.equal((await request(`http://127.0.0.1:${osmand}/?${osmAndQuery('metrics-stranger', fixAt(0))}`)).statusCode, 404);

    const connection = await DeviceConnection.open(teltonika);
    connection.write(teltonikaHandshake('356307042449101'));
    assert.deepEqual(await connection.read(1), Buffer.from([1]));
    connection.write(teltonikaAvlPacket([fixAt(1), fixAt(2)]));
    assert.deepEqual(await connection.read(4), Buffer.from([0, 0, 0, 2]));
    const connected = (await scrape()).text;
    assert.equal(sampleOf(connected, 'trackstack_device_connections') - sampleOf(before, 'trackstack_device_connections'), 1);

    // The device is deleted while connected: its next report is refused and the connection dropped.
    assert.equal((await server.app.inject({ method: 'DELETE', url: `/api/devices/${deviceId}`, headers: owner.authorization })).statusCode, 204);
    connection.write(teltonikaAvlPacket([fixAt(3), fixAt(4), fixAt(5)]));
    await connection.assertClosed();
    await eventually(async () => sampleOf((await scrape()).text, 'trackstack_device_connections') === sampleOf(before, 'trackstack_device_connections'), 'the connection is counted out');

    const after = (await scrape()).text;
    assert.equal(count(after, 'osmand', 'accepted') - count(before, 'osmand', 'accepted'), 1);
    assert.equal(count(after, 'teltonika', 'accepted') - count(before, 'teltonika', 'accepted'), 2);
    assert.equal(count(after, 'teltonika', 'refused') - count(before, 'teltonika', 'refused'), 3);
    assert.equal(sampleOf(after, 'trackstack_ingest_unknown_devices_total') - sampleOf(before, 'trackstack_ingest_unknown_devices_total'), 1);
    assert.match(after, /trackstack_ingest_positions_total\{protocol="h02",outcome="accepted"\} 0/);
  });

  it('counts the messages kept despite a checksum that does not match, per protocol', async () => {
    assert.ok(server.tracking);
    const teltonika = await server.tracking.ingestion.listen('teltonika', 0);
    await registerDevice(server, owner, '356307042449102');
    const mismatches = (text: string) => sampleOf(text, 'trackstack_ingest_checksum_mismatches_total', { protocol: 'teltonika' });
    const before = (await scrape()).text;
    assert.match(before, /trackstack_ingest_checksum_mismatches_total\{protocol="gt06"\} 0/);

    const connection = await DeviceConnection.open(teltonika);
    connection.write(teltonikaHandshake('356307042449102'));
    assert.deepEqual(await connection.read(1), Buffer.from([1]));
    connection.write(teltonikaAvlPacket([fixAt(1)]));
    assert.deepEqual(await connection.read(4), Buffer.from([0, 0, 0, 1]));
    const sloppy = teltonikaAvlPacket([fixAt(2)]);
    sloppy[sloppy.length - 1] = sloppy[sloppy.length - 1]! ^ 0xff;
    connection.write(sloppy);
    assert.deepEqual(await connection.read(4), Buffer.from([0, 0, 0, 1]), 'the packet is kept and acknowledged');
    await connection.close();

    assert.equal(mismatches((await scrape()).text) - mismatches(before), 1);
  });

  it('closes the listener on shutdown', async () => {
    await server.dispose();
    disposed = true;
    const refused = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    });
    assert.equal(refused, 'ECONNREFUSED');
  });
});
