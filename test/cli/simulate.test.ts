import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { SIMULATED_PROTOCOLS, generatedRoute, gpxRoute, registerDevices, runSimulation, simulatedIds } from '../../src/cli/simulate.ts';
import type { SimulatedProtocol } from '../../src/cli/simulate.ts';
import { distanceMeters } from '../../src/services/tracking/geo/sphere.ts';
import type { TrackingTables } from '../../src/services/tracking/tables.ts';
import { testEngines } from '../support/engines.ts';
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

describe('simulator against a running server', () => {
  let server: TestServer;
  let url: string;
  const ports = {} as Record<SimulatedProtocol, number>;
  const account = { email: 'simulator@example.com', password: 'Simulator-Password-1' };

  before(async () => {
    server = await startTestServer(testEngines()[0]!, { RATE_LIMITS: 'off' });
    await server.auth!.api.accounts.create({ ...account, emailVerified: true });
    for (const protocol of SIMULATED_PROTOCOLS) ports[protocol] = await server.tracking!.ingestion.listen(protocol, 0);
    await server.app.listen({ port: 0, host: '127.0.0.1' });
    const address = server.app.server.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  after(() => server.dispose());

  const storedCount = async () =>
    Number((await (server.database!.db as Kysely<TrackingTables>).selectFrom('positions').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow()).count);

  it('registers its trackers, then drives them over every protocol: every acknowledged report is stored', async () => {
    let base = 860_000_000_001_000;
    for (const protocol of SIMULATED_PROTOCOLS) {
      const uniqueIds = simulatedIds(String(base), 3);
      base += 100;
      const registered = await registerDevices({ url, ...account, protocol, uniqueIds, speedKmh: 50, stopSeconds: 90 });
      assert.deepEqual(registered, { created: 3, existing: 0 });
      assert.deepEqual(await registerDevices({ url, ...account, protocol, uniqueIds, speedKmh: 50, stopSeconds: 90 }), { created: 0, existing: 3 });

      const before = await storedCount();
      const stats = await runSimulation({ protocol, host: '127.0.0.1', port: ports[protocol], uniqueIds, rate: 20, route: generatedRoute(), speedKmh: 50, stopSeconds: 90, durationMs: 600 });
      await server.tracking!.ingestion.pipeline.settled();
      assert.equal(stats.refused, 0, protocol);
      assert.ok(stats.acknowledged >= 3, `${protocol}: ${stats.acknowledged} acknowledged`);
      assert.equal(stats.acknowledged, stats.sent, `${protocol}: the last reports are acknowledged before it stops`);
      assert.equal((await storedCount()) - before, stats.acknowledged, protocol);
    }
  });

  it('trackers the server does not know are refused and stop', async () => {
    const stats = await runSimulation({
      protocol: 'teltonika',
      host: '127.0.0.1',
      port: ports.teltonika,
      uniqueIds: simulatedIds('350000000000000', 2),
      rate: 1,
      route: generatedRoute(),
      speedKmh: 50,
      stopSeconds: 90,
      durationMs: 2000,
    });
    assert.deepEqual([stats.refused, stats.acknowledged], [2, 0]);
  });
});
