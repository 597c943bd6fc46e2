import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { generatedRoute, gpxRoute, registerDevices, runSimulation, simulatedIds, simulatedTracker } from '../../src/cli/simulate.ts';
import { DEVICE_PROTOCOLS, protocolEntry } from '../../src/services/tracking/protocols/registry.ts';
import type { DeviceProtocol } from '../../src/services/tracking/protocols/registry.ts';
import { distanceMeters } from '../../src/services/tracking/geo/sphere.ts';
import { JT808_MESSAGES, jt808Commands, jt808Header, jt808Message, jt808MessageType } from '../../src/services/tracking/protocols/jt808/decoder.ts';
import type { TrackingTables } from '../../src/services/tracking/tables.ts';
import { request } from 'undici';
import { testEngines } from '../support/engines.ts';
import { eventually } from '../support/eventually.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

describe('simulator routes', () => {
  it('generates a closed loop of about 5 km', () => {
    const route = generatedRoute();
    let length = 0;
    for (let index = 0; index < route.length; index++) length += distanceMeters(route[index]!, route[(index + 1) % route.length]!);
    assert.ok(length > 4900 && length < 5100, `${length} m`);
  });

  it('reads track, route and way points from GPX, in either attribute order', () => {
    const gpx = `<gpx><trk><trkseg><trkpt lat="52.1" lon="13.1"><ele>3</ele></trkpt><trkpt lon='13.2' lat='52.2'/></trkseg></trk>
      <rte><rtept lat="52.3" lon="13.3"></rtept></rte><wpt lat="95" lon="1"/></gpx>`;
    assert.deepEqual(gpxRoute(gpx), [
      { lat: 52.1, lon: 13.1 },
      { lat: 52.2, lon: 13.2 },
      { lat: 52.3, lon: 13.3 },
    ]);
    assert.throws(() => gpxRoute('<gpx><trkpt lat="1" lon="2"/></gpx>'), /fewer than two/);
  });

  it('makes IMEI-shaped ids', () => {
    assert.deepEqual(simulatedIds('860000000000998', 3), ['860000000000998', '860000000000999', '860000000001000']);
    assert.deepEqual(simulatedIds('42', 1), ['000000000000042']);
  });
});

describe('simulated trackers against a scripted server', () => {
  it('a JT/T 808 tracker answers a command that overtakes the answer to its login', async () => {
    const uniqueId = '013912345678';
    const header = jt808Header(uniqueId);
    const answered: number[] = [];
    const server = net.createServer((socket) => {
      let pending = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        for (let end = pending.indexOf(0x7e, 1); pending[0] === 0x7e && end > 0; end = pending.indexOf(0x7e, 1)) {
          const type = jt808MessageType(pending.subarray(0, end + 1));
          pending = pending.subarray(end + 1);
          if (type === JT808_MESSAGES.terminalResponse) answered.push(type);
          else if (type === 0x0100) {
            // The device is live from its registration on, so a command can be written before the authentication's answer.
            socket.write(Buffer.concat([
              jt808Message(header, JT808_MESSAGES.registerResponse, Buffer.concat([Buffer.from([0, 0, 0]), Buffer.from(uniqueId, 'latin1')])),
              jt808Commands.encode({ type: 'engineStop', attributes: {} }, { uniqueId, sequence: 1, now: new Date() }),
            ]));
          } else socket.write(jt808Message(header, JT808_MESSAGES.generalResponse, Buffer.from([0, 0, (type >> 8) & 0xff, type & 0xff, 0])));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as net.AddressInfo).port;
      const stats = await runSimulation({ protocol: 'jt808', host: '127.0.0.1', port, uniqueIds: [uniqueId], rate: 10, route: generatedRoute(), speedKmh: 50, stopSeconds: 90, durationMs: 500 });
      assert.deepEqual([stats.commandsAnswered, answered.length], [1, 1]);
      assert.ok(stats.acknowledged >= 2 && stats.acknowledged === stats.sent, `${stats.acknowledged} of ${stats.sent} acknowledged`);
    } finally {
      server.close();
    }
  });
});

describe('simulator against a running server', () => {
  let server: TestServer;
  let url: string;
  const ports = {} as Record<DeviceProtocol, number>;
  const account = { email: 'simulator@example.com', password: 'Simulator-Password-1' };

  before(async () => {
    server = await startTestServer(testEngines()[0]!, { RATE_LIMITS: 'off' });
    await server.auth!.api.accounts.create({ ...account, emailVerified: true });
    for (const protocol of DEVICE_PROTOCOLS) ports[protocol] = await server.tracking!.ingestion.listen(protocol, 0);
    await server.app.listen({ port: 0, host: '127.0.0.1' });
    const address = server.app.server.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  after(() => server.dispose());

  const storedCount = async () =>
    Number((await (server.database!.db as Kysely<TrackingTables>).selectFrom('positions').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow()).count);

  it('registers its trackers, then drives them over every protocol of the registry: every acknowledged report is stored', async () => {
    for (const protocol of DEVICE_PROTOCOLS) {
      const tracker = await simulatedTracker(protocol);
      const uniqueIds = [1001, 1002, 1003].map((n) => tracker.uniqueId(n));
      const registered = await registerDevices({ url, ...account, protocol, uniqueIds, speedKmh: 50, stopSeconds: 90 });
      assert.deepEqual(registered, { created: 3, existing: 0 });
      assert.deepEqual(await registerDevices({ url, ...account, protocol, uniqueIds, speedKmh: 50, stopSeconds: 90 }), { created: 0, existing: 3 });

      const before = await storedCount();
      const stats = await runSimulation({ protocol, host: '127.0.0.1', port: ports[protocol], uniqueIds, rate: 20, route: generatedRoute(), speedKmh: 50, stopSeconds: 90, durationMs: 600 });
      await server.tracking!.ingestion.pipeline.settled();
      assert.equal(stats.refused, 0, protocol);
      assert.ok(stats.sent >= 3, `${protocol}: ${stats.sent} sent`);
      // OsmAnd is answered over HTTP, the frame protocols in frames of their own, Suntech not at all.
      if (tracker.serverFrameLength || protocolEntry(protocol)!.transports.includes('http')) {
        assert.equal(stats.acknowledged, stats.sent, `${protocol}: the last reports are acknowledged before it stops`);
        assert.equal((await storedCount()) - before, stats.acknowledged, protocol);
      } else {
        // The server answers this protocol nothing: every report sent is stored, in time.
        assert.equal(stats.acknowledged, 0, protocol);
        await eventually(async () => (await storedCount()) - before === stats.sent, `${protocol}: ${stats.sent} reports stored`);
      }
    }
  });

  it('simulated trackers answer commands: engineStop goes out and comes back delivered, with its commandResult', async () => {
    const login = await request(`${url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(account) });
    const token = ((await login.body.json()) as { accessToken: string }).accessToken;
    const headers = { authorization: `Bearer ${token}` };
    const answering: DeviceProtocol[] = [];
    for (const protocol of DEVICE_PROTOCOLS) if ((await simulatedTracker(protocol)).commands) answering.push(protocol);
    assert.deepEqual(answering, ['gt06', 'teltonika', 'h02', 'jt808', 'gps103']);
    for (const protocol of answering) {
      const uniqueIds = [(await simulatedTracker(protocol)).uniqueId(2000)];
      await registerDevices({ url, ...account, protocol, uniqueIds, speedKmh: 50, stopSeconds: 90 });
      const abort = new AbortController();
      const running = runSimulation({ protocol, host: '127.0.0.1', port: ports[protocol], uniqueIds, rate: 5, route: generatedRoute(), speedKmh: 50, stopSeconds: 90, signal: abort.signal });
      const devices = (await server.app.inject({ method: 'GET', url: '/api/devices/', headers })).json() as { id: number; uniqueId: string }[];
      const deviceId = devices.find((device) => device.uniqueId === uniqueIds[0])!.id;
      try {
        await eventually(async () => {
          const sent = await server.app.inject({ method: 'POST', url: '/api/commands/send', headers, payload: { deviceId, type: 'engineStop' } });
          return sent.statusCode === 200;
        }, `${protocol}: a command written to the connected tracker`, 10_000);
        await eventually(async () => {
          const history = (await server.app.inject({ method: 'GET', url: `/api/commands/history?deviceId=${deviceId}`, headers })).json() as { status: string }[];
          return history.some((command) => command.status === 'delivered');
        }, `${protocol}: the answer to make it delivered`, 10_000);
      } finally {
        // A simulation without a duration runs until aborted; a failed wait must not leave it holding the test open.
        abort.abort();
      }
      const stats = await running;
      assert.ok(stats.commandsAnswered >= 1, protocol);
      assert.equal(stats.acknowledged, stats.sent, `${protocol}: command answers do not disturb the acknowledgements`);
      await server.tracking!.ingestion.pipeline.settled();
      const history = (await server.app.inject({ method: 'GET', url: `/api/commands/history?deviceId=${deviceId}`, headers })).json() as { id: number; type: string; status: string }[];
      const delivered = history.find((command) => command.status === 'delivered');
      assert.equal(delivered?.type, 'engineStop', protocol);
      const results = await server.app.inject({ method: 'GET', url: `/api/events?deviceId=${deviceId}&type=commandResult`, headers });
      assert.ok((results.json() as { attributes: { commandId?: number } }[]).some((event) => event.attributes.commandId === delivered?.id), `${protocol}: ${results.body}`);
    }
  });

  it('trackers the server does not know are refused and stop, whether refused at their login or at their first report', async () => {
    for (const protocol of ['teltonika', 'wialon', 'h02', 'gl200'] as const) {
      const tracker = await simulatedTracker(protocol);
      const stats = await runSimulation({
        protocol,
        host: '127.0.0.1',
        port: ports[protocol],
        uniqueIds: [tracker.uniqueId(9001), tracker.uniqueId(9002)],
        rate: 1,
        route: generatedRoute(),
        speedKmh: 50,
        stopSeconds: 90,
        durationMs: 2000,
      });
      assert.deepEqual([stats.refused, stats.acknowledged, stats.reconnects], [2, 0, 0], protocol);
    }
  });
});
