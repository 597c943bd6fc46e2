import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { Kysely } from 'kysely';
import type { DeviceFix } from '../../../../src/services/tracking/protocols/simulated-tracker.ts';
import { teltonikaAvlPacket, teltonikaHandshake } from '../../../../src/services/tracking/protocols/teltonika/simulator.ts';
import type { TrackingTables } from '../../../../src/services/tracking/tables.ts';
import { signIn } from '../../../support/api.ts';
import type { SignedIn } from '../../../support/api.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestServer } from '../../../support/server.ts';
import { insertReportRows, stopRow, summaryHourRow, tripRow } from '../../../factories/report.ts';
import { writeTestPlans } from '../../billing/support/plans.ts';
import { DeviceConnection } from '../ingest/support.ts';
import { createDevice, get, share } from '../support/tracking.ts';
import { parseCsv, readXlsx, serialToWallTime } from './support.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Midnight UTC opening the report day most tests ask about. */
const D1 = Date.parse('2025-03-02T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const window = (from: number, to: number) => `from=${encodeURIComponent(iso(from))}&to=${encodeURIComponent(iso(to))}`;
const DAY_WINDOW = window(D1, D1 + DAY - 1);

/** basic: everything; noreports: no report routes; short: 7 days of history (every fixture here is older). */
const PLANS = [
  { id: 'basic', name: 'Basic', default: true },
  { id: 'noreports', name: 'No reports', features: { reports: false } },
  { id: 'short', name: 'Short', limits: { historyDays: 7 } },
];

type Row = Record<string, unknown>;

describeEachEngine('report routes', (engine) => {
  let server: TestServer;
  let db: Kysely<TrackingTables>;
  let owner: SignedIn;
  let stranger: SignedIn;
  let viewer: SignedIn;
  let admin: SignedIn;
  let traveller: SignedIn;
  let teltonika: number;
  const devices = { a: 0, b: 0, foreign: 0, summary: 0, daily: 0, fences: 0 };
  const trips = { before: 0, inside: 0, after: 0, ongoing: 0, other: 0, foreign: 0 };
  const stops = { before: 0, inside: 0, ongoing: 0 };

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off', PLANS_FILE: writeTestPlans(PLANS), REPORT_MAX_DEVICES: '3', REPORT_MAX_DAYS: '31' });
    db = server.database!.db as Kysely<TrackingTables>;
    owner = await signIn(server, 'reports-owner@example.com');
    stranger = await signIn(server, 'reports-stranger@example.com');
    viewer = await signIn(server, 'reports-viewer@example.com');
    admin = await signIn(server, 'reports-admin@example.com', { administrator: true });
    traveller = await signIn(server, 'reports-traveller@example.com');
    devices.a = await createDevice(server, owner, 'report-a');
    devices.b = await createDevice(server, owner, 'report-b');
    devices.foreign = await createDevice(server, stranger, 'report-foreign');
    devices.summary = await createDevice(server, stranger, '356307042449001');
    devices.fences = await createDevice(server, stranger, '356307042449002');
    devices.daily = await createDevice(server, traveller, '356307042449003');
    await share(server, owner, devices.a, viewer.email, { position: true });
    await setTimezone(owner, 'Europe/Berlin');
    await setTimezone(traveller, 'Asia/Kolkata');
    teltonika = await server.tracking!.ingestion.listen('teltonika', 0);

    const { trips: tripIds, stops: stopIds } = await insertReportRows(db, {
      trips: [
        tripRow(devices.a, D1 - HOUR, D1 + HOUR),
        tripRow(devices.a, D1 + 8 * HOUR, D1 + 9 * HOUR, { start_address: null, spent_fuel: null, driver_unique_id: null }),
        tripRow(devices.a, D1 + 23 * HOUR + 1_800_000, D1 + DAY + 1_800_000),
        tripRow(devices.a, D1 + DAY + 2 * HOUR, D1 + DAY + 3 * HOUR, { ongoing: 1 }),
        tripRow(devices.b, D1 + 10 * HOUR, D1 + 11 * HOUR),
        tripRow(devices.foreign, D1 + 12 * HOUR, D1 + 13 * HOUR),
      ],
      stops: [
        stopRow(devices.a, D1 - 2 * HOUR, D1 - 30 * 60_000 + 2 * HOUR),
        stopRow(devices.a, D1 + 9 * HOUR, D1 + 10 * HOUR, { address: '=HYPERLINK("x"), "quoted"' }),
        stopRow(devices.b, D1 + 20 * HOUR, D1 + 20 * HOUR + 600_000, { ongoing: 1, engine_hours: null }),
      ],
    });
    [trips.before, trips.inside, trips.after, trips.ongoing, trips.other, trips.foreign] = tripIds as [number, number, number, number, number, number];
    [stops.before, stops.inside, stops.ongoing] = stopIds as [number, number, number];
  });
  after(() => server.dispose());

  async function setTimezone(user: SignedIn, timezone: string): Promise<void> {
    const response = await server.app.inject({ method: 'PUT', url: '/api/auth/profile', headers: user.authorization, payload: { timezone } });
    assert.equal(response.statusCode, 200, response.body);
  }

  async function rows(path: string, user: SignedIn = owner): Promise<Row[]> {
    const response = await get(server, path, user);
    assert.equal(response.statusCode, 200, response.body);
    assert.match(String(response.headers['content-type']), /^application\/json/);
    return response.json() as Row[];
  }

  async function refused(path: string, user: SignedIn, status: number, code: string): Promise<Row> {
    const response = await get(server, path, user);
    assert.equal(response.statusCode, status, response.body);
    const body = response.json() as Row;
    assert.equal(body.code, code);
    assert.equal(body.statusCode, status);
    return body;
  }

  const count = async (table: 'trips' | 'stops' | 'summary_hours' | 'positions' | 'events') =>
    Number((await db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

  /** A Teltonika tracker on a real socket; send() resolves once the server acknowledged the packet and processed it. */
  async function tracker(imei: string) {
    const connection = await DeviceConnection.open(teltonika);
    connection.write(teltonikaHandshake(imei));
    assert.deepEqual(await connection.read(1), Buffer.from([1]));
    return {
      async send(...fixes: DeviceFix[]) {
        for (const fix of fixes) {
          connection.write(teltonikaAvlPacket([fix]));
          await connection.read(4);
        }
        await server.tracking!.ingestion.pipeline.settled();
      },
      close: () => connection.close(),
    };
  }
  const fix = (time: number, changes: Partial<DeviceFix> = {}): DeviceFix => ({
    time: new Date(time),
    latitude: 52.5,
    longitude: 13.4,
    altitude: 40,
    speed: 20,
    course: 90,
    valid: true,
    ...changes,
  });

  it('trips: those overlapping the window, whole, by device and start; the ongoing one ends at its latest position', async () => {
    const day = await rows(`/api/reports/trips?deviceId=${devices.a}&deviceId=${devices.b}&${DAY_WINDOW}`);
    assert.deepEqual(
      day.map((row) => [row.deviceId, row.startTime, row.endTime]),
      [
        [devices.a, iso(D1 - HOUR), iso(D1 + HOUR)],
        [devices.a, iso(D1 + 8 * HOUR), iso(D1 + 9 * HOUR)],
        [devices.a, iso(D1 + 23 * HOUR + 1_800_000), iso(D1 + DAY + 1_800_000)],
        [devices.b, iso(D1 + 10 * HOUR), iso(D1 + 11 * HOUR)],
      ],
    );
    assert.deepEqual(day[0], {
      deviceId: devices.a,
      deviceName: 'Tracker report-a',
      startTime: iso(D1 - HOUR),
      endTime: iso(D1 + HOUR),
      duration: 2 * HOUR,
      distance: 12_345.5,
      averageSpeed: 21.5,
      maxSpeed: 48.25,
      startOdometer: 1_000_000,
      endOdometer: 1_012_345.5,
      startPositionId: 101,
      endPositionId: 102,
      startLat: 52.5,
      startLon: 13.4,
      endLat: 52.6,
      endLon: 13.5,
      startAddress: 'Alexanderplatz, Berlin',
      endAddress: 'Potsdamer Platz, Berlin',
      spentFuel: 3.5,
      driverUniqueId: 'driver-7',
      ongoing: false,
    });
    assert.deepEqual([day[1]?.startAddress, day[1]?.spentFuel, day[1]?.driverUniqueId], [null, null, null]);

    const week = await rows(`/api/reports/trips?deviceId=${devices.a}&${window(D1 - 3 * DAY, D1 + 4 * DAY)}`);
    assert.equal(week.length, 4);
    assert.deepEqual(week.slice(0, 3), day.slice(0, 3), 'the same trips, the same values, whatever the window');
    assert.deepEqual([week[3]?.endTime, week[3]?.ongoing], [iso(D1 + DAY + 3 * HOUR), true]);
  });

  it('without deviceId: every device the caller may see positions of; a viewer sees the shared device only', async () => {
    const all = await rows(`/api/reports/trips?${DAY_WINDOW}`);
    assert.deepEqual([...new Set(all.map((row) => row.deviceId))], [devices.a, devices.b]);
    const shared = await rows(`/api/reports/trips?${DAY_WINDOW}`, viewer);
    assert.deepEqual([...new Set(shared.map((row) => row.deviceId))], [devices.a]);
    assert.deepEqual(await rows(`/api/reports/trips?${window(D1 + 5 * DAY, D1 + 6 * DAY)}`), []);
    const empty = await signIn(server, 'reports-no-devices@example.com');
    for (const kind of ['trips', 'stops', 'summary', 'route', 'events', 'geofences']) assert.deepEqual(await rows(`/api/reports/${kind}?${DAY_WINDOW}`, empty), [], kind);
  });

  it('a report longer than a page streams every row once, in order, the span in progress at from first', async () => {
    const busy = await createDevice(server, owner, 'report-busy');
    const minute = 60_000;
    const many = Array.from({ length: 2_345 }, (_, index) => tripRow(busy, D1 + index * 20_000, D1 + index * 20_000 + 10_000));
    await insertReportRows(db, { trips: [tripRow(busy, D1 - 5 * minute, D1 + 5_000), ...many] });
    const listed = await rows(`/api/reports/trips?deviceId=${busy}&deviceId=${devices.b}&${DAY_WINDOW}`);
    assert.equal(listed.length, 1 + 2_345 + 1);
    const starts = listed.filter((row) => row.deviceId === busy).map((row) => Date.parse(row.startTime as string));
    assert.equal(starts[0], D1 - 5 * minute);
    assert.deepEqual(starts, [...starts].sort((a, b) => a - b));
    assert.equal(new Set(starts).size, starts.length);
    assert.deepEqual(listed.map((row) => row.deviceId).filter((id, index, all) => id !== all[index - 1]), [devices.b, busy].sort((a, b) => a - b));
    const csv = parseCsv((await get(server, `/api/reports/trips?deviceId=${busy}&${DAY_WINDOW}&format=csv`, owner)).body);
    assert.equal(csv.length, 1 + 1 + 2_345);
  });

  it('stops: overlapping ones whole, with their shape; the ongoing one is flagged', async () => {
    const day = await rows(`/api/reports/stops?${DAY_WINDOW}`);
    assert.deepEqual(day.map((row) => [row.deviceId, row.startTime]), [
      [devices.a, iso(D1 - 2 * HOUR)],
      [devices.a, iso(D1 + 9 * HOUR)],
      [devices.b, iso(D1 + 20 * HOUR)],
    ]);
    assert.deepEqual(day[0], {
      deviceId: devices.a,
      deviceName: 'Tracker report-a',
      startTime: iso(D1 - 2 * HOUR),
      endTime: iso(D1 + 90 * 60_000),
      duration: 210 * 60_000,
      positionId: 201,
      lat: 48.1,
      lon: 11.5,
      address: 'Marienplatz, München',
      engineHours: 600_000,
      spentFuel: 0.25,
      ongoing: false,
    });
    assert.deepEqual([day[2]?.ongoing, day[2]?.engineHours], [true, null]);
  });

  it('bad input answers 4xx JSON with a stable code and changes nothing', async () => {
    const before = await Promise.all([count('trips'), count('stops'), count('summary_hours')]);
    await refused(`/api/reports/trips?deviceId=${devices.a}&${window(D1 + DAY, D1)}`, owner, 400, 'VALIDATION_FAILED');
    await refused(`/api/reports/trips?deviceId=${devices.a}&from=${encodeURIComponent(iso(D1))}`, owner, 400, 'VALIDATION_FAILED');
    await refused(`/api/reports/trips?deviceId=${devices.a}&from=yesterday&to=${encodeURIComponent(iso(D1))}`, owner, 400, 'VALIDATION_FAILED');
    await refused(`/api/reports/trips?deviceId=${devices.a}&${DAY_WINDOW}&format=pdf`, owner, 400, 'VALIDATION_FAILED');
    await refused(`/api/reports/summary?deviceId=${devices.a}&${DAY_WINDOW}&daily=maybe`, owner, 400, 'VALIDATION_FAILED');
    const long = await refused(`/api/reports/summary?deviceId=${devices.a}&${window(D1, D1 + 31 * DAY + 1)}`, owner, 400, 'REPORT_WINDOW_TOO_LONG');
    assert.deepEqual(long.details, [{ path: '/query/to', message: 'must be at most 31 days after from' }]);
    assert.equal((await get(server, `/api/reports/trips?deviceId=${devices.a}&${window(D1, D1 + 31 * DAY)}`, owner)).statusCode, 200, 'exactly the longest window');
    await refused(`/api/reports/trips?deviceId=999999&${DAY_WINDOW}`, owner, 404, 'NOT_FOUND');
    await refused(`/api/reports/stops?deviceId=${devices.a}&deviceId=${devices.foreign}&${DAY_WINDOW}`, owner, 403, 'FORBIDDEN');
    await refused(`/api/reports/events?deviceId=${devices.a}&${DAY_WINDOW}`, viewer, 403, 'PERMISSION_REQUIRED');
    await refused(`/api/reports/geofences?deviceId=${devices.a}&${DAY_WINDOW}`, viewer, 403, 'PERMISSION_REQUIRED');
    const many = [devices.a, devices.b, devices.foreign, devices.summary].map((id) => `deviceId=${id}`).join('&');
    await refused(`/api/reports/trips?${many}&${DAY_WINDOW}`, admin, 400, 'REPORT_TOO_MANY_DEVICES');
    assert.equal((await get(server, `/api/reports/trips?${DAY_WINDOW}`, owner)).statusCode, 200);
    assert.equal((await get(server, `/api/reports/trips?deviceId=${devices.a}&deviceId=${devices.a}&${DAY_WINDOW}`, owner)).statusCode, 200, 'a device named twice counts once');
    const response = await server.app.inject({ method: 'GET', url: `/api/reports/trips?${DAY_WINDOW}` });
    assert.equal(response.statusCode, 401);
    assert.deepEqual(await Promise.all([count('trips'), count('stops'), count('summary_hours')]), before);
  });

  it('past REPORT_MAX_DEVICES visible devices, a report without deviceId is refused rather than cut', async () => {
    const crowded = await signIn(server, 'reports-crowded@example.com');
    for (const name of ['c1', 'c2', 'c3', 'c4']) await createDevice(server, crowded, `report-${name}`);
    const body = await refused(`/api/reports/summary?${DAY_WINDOW}`, crowded, 400, 'REPORT_TOO_MANY_DEVICES');
    assert.deepEqual(body.details, [{ path: '/query/deviceId', message: 'at most 3 devices' }]);
  });

  it("a plan without reports answers 402 FEATURE_NOT_IN_PLAN on every report route; the plan's history cut applies", async () => {
    const setPlan = async (user: SignedIn, planId: string | null) => {
      const response = await server.app.inject({
        method: planId === null ? 'DELETE' : 'PUT',
        url: `/api/subscriptions/${user.userId}/plan`,
        headers: admin.authorization,
        ...(planId === null ? {} : { payload: { planId } }),
      });
      assert.ok(response.statusCode < 300, response.body);
    };
    await setPlan(owner, 'noreports');
    try {
      for (const kind of ['trips', 'stops', 'summary', 'route', 'events', 'geofences']) {
        const body = await refused(`/api/reports/${kind}?deviceId=${devices.a}&${DAY_WINDOW}&format=csv`, owner, 402, 'FEATURE_NOT_IN_PLAN');
        assert.equal((body.details as { feature: string }[])[0]?.feature, 'reports');
      }
      assert.equal((await get(server, `/api/reports/trips?${DAY_WINDOW}`, viewer)).statusCode, 200, "the caller's plan decides, not the owner's");
    } finally {
      await setPlan(owner, null);
    }
    await setPlan(owner, 'short');
    try {
      assert.deepEqual(await rows(`/api/reports/trips?deviceId=${devices.a}&${DAY_WINDOW}`), []);
      assert.deepEqual(await rows(`/api/reports/stops?${DAY_WINDOW}`, viewer), [], "a shared device follows its owner's plan");
    } finally {
      await setPlan(owner, null);
    }
    assert.equal((await rows(`/api/reports/trips?deviceId=${devices.a}&${DAY_WINDOW}`)).length, 3);
  });

  it('CSV (Accept or format=csv) streams the same rows: units in the headers, times in the caller\'s zone', async () => {
    const json = await rows(`/api/reports/trips?${DAY_WINDOW}`);
    const asks: { headers: Record<string, string>; query: string }[] = [{ headers: { accept: 'text/csv' }, query: '' }, { headers: {}, query: '&format=csv' }];
    for (const ask of asks) {
      const response = await get(server, `/api/reports/trips?${DAY_WINDOW}${ask.query}`, owner, ask.headers);
      assert.equal(response.statusCode, 200);
      assert.match(String(response.headers['content-type']), /^text\/csv/);
      assert.equal(response.headers['content-disposition'], 'attachment; filename="trips.csv"');
      const [header, ...records] = parseCsv(response.body);
      assert.deepEqual(header?.slice(0, 9), [
        'deviceId', 'deviceName', 'startTime (Europe/Berlin)', 'endTime (Europe/Berlin)', 'duration (ms)', 'distance (m)',
        'averageSpeed (kn)', 'maxSpeed (kn)', 'startOdometer (m)',
      ]);
      assert.equal(records[0]?.[2], '2025-03-02T00:00:00.000+01:00', 'Berlin is an hour ahead in March');
      const parsed = records.map((record) =>
        Object.fromEntries(
          (header as string[]).map((name, index) => {
            const field = name.replace(/ \(.*\)$/, '');
            const text = record[index] as string;
            const sample = (json[0] as Row)[field];
            const value = text === '' ? null : name.includes('(Europe/Berlin)') ? iso(Date.parse(text)) : typeof sample === 'number' ? Number(text) : typeof sample === 'boolean' ? text === 'true' : text;
            return [field, value];
          }),
        ),
      );
      assert.deepEqual(parsed, json);
    }
    const stopsCsv = parseCsv((await get(server, `/api/reports/stops?deviceId=${devices.a}&${DAY_WINDOW}&format=csv`, owner)).body);
    assert.equal(stopsCsv[2]?.[8], '\'=HYPERLINK("x"), "quoted"', 'a formula is defused, quotes survive');
  });

  it('XLSX (Accept or format=xlsx) opens as a workbook holding the same rows, times as local dates', async () => {
    const json = await rows(`/api/reports/trips?${DAY_WINDOW}`);
    const xlsx = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
    for (const ask of [{ headers: { accept: xlsx }, query: '' }, { headers: { accept: 'text/csv' }, query: '&format=xlsx' }]) {
      const response = await get(server, `/api/reports/trips?${DAY_WINDOW}${ask.query}`, owner, ask.headers);
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers['content-type'], xlsx);
      assert.equal(response.headers['content-disposition'], 'attachment; filename="trips.xlsx"');
      const { sheetName, rows: sheet } = readXlsx(response.rawPayload);
      assert.equal(sheetName, 'trips');
      const [header, ...records] = sheet;
      assert.equal(header?.[2]?.value, 'startTime (Europe/Berlin)');
      assert.equal(records.length, json.length);
      records.forEach((record, index) => {
        const row = json[index] as Row;
        assert.equal(record[0]?.value, row.deviceId);
        assert.equal(record[1]?.value, row.deviceName);
        assert.equal(record[2]?.style, 1, 'a time is a date cell');
        // Berlin wall time is UTC + 1 in March.
        assert.equal(serialToWallTime(record[2]?.value as number), Date.parse(row.startTime as string) + HOUR);
        assert.equal(record[5]?.value, row.distance);
        assert.equal(record[16]?.value, row.startAddress);
        assert.equal(record[20]?.value, row.ongoing);
      });
    }
    const empty = readXlsx((await get(server, `/api/reports/summary?deviceId=${devices.b}&${DAY_WINDOW}&format=xlsx`, owner)).rawPayload);
    assert.equal(empty.rows.length, 1, 'a header row only');
  });

  it('summary: whole hours from summary_hours, the partial edge hours from the positions a device sent', async () => {
    const hourRows = [summaryHourRow(devices.summary, D1 + 10 * HOUR), summaryHourRow(devices.summary, D1 + 11 * HOUR, { max_speed: 55, positions: 40, speed_sum: 800 })];
    await insertReportRows(db, { hours: hourRows });
    const device = await tracker('356307042449001');
    await device.send(
      fix(D1 + 9 * HOUR + 40 * 60_000, { odometer: 1000, speed: 10 }),
      fix(D1 + 9 * HOUR + 50 * 60_000, { odometer: 1500, speed: 30 }),
      fix(D1 + 12 * HOUR + 10 * 60_000, { odometer: 30_000, speed: 20 }),
      fix(D1 + 12 * HOUR + 20 * 60_000, { odometer: 30_600, speed: 20 }),
    );
    await device.close();
    const from = D1 + 9 * HOUR + 30 * 60_000;
    const to = D1 + 12 * HOUR + 15 * 60_000;
    const route = await rows(`/api/reports/route?deviceId=${devices.summary}&${window(from, to)}`, stranger);
    assert.equal(route.length, 3, 'the route holds the window\'s positions');
    const speeds = route.map((position) => position.speed as number);
    const [summary, ...rest] = await rows(`/api/reports/summary?deviceId=${devices.summary}&${window(from, to)}`, stranger);
    assert.deepEqual(rest, []);
    const averageSpeed = (speeds.reduce((sum, speed) => sum + speed, 0) + 1_200 + 800) / (3 + 60 + 40);
    assert.ok(Math.abs((summary?.averageSpeed as number) - averageSpeed) < 1e-9, 'the mean of every position\'s speed');
    assert.deepEqual({ ...summary, averageSpeed }, {
      deviceId: devices.summary,
      deviceName: 'Tracker 356307042449001',
      startTime: iso(D1 + 9 * HOUR + 40 * 60_000),
      endTime: iso(D1 + 12 * HOUR + 10 * 60_000),
      // 09:40 → 09:50 by odometer, the two whole hours, and the step from 09:50 into 12:10.
      distance: 500 + 10_000 + 10_000 + 28_500,
      averageSpeed,
      maxSpeed: 55,
      engineHours: 2 * 3_480_000,
      spentFuel: 4,
      startOdometer: 1000,
      endOdometer: 30_000,
    });

    const inside = await rows(`/api/reports/summary?deviceId=${devices.summary}&${window(D1 + 10 * HOUR, D1 + 12 * HOUR - 1)}`, stranger);
    assert.deepEqual(inside.map((row) => [row.distance, row.startTime, row.endTime]), [[20_000, iso(D1 + 10 * HOUR + 60_000), iso(D1 + 11 * HOUR + 3_540_000)]], 'whole hours only');
    const short = await rows(`/api/reports/summary?deviceId=${devices.summary}&${window(D1 + 12 * HOUR + 5 * 60_000, D1 + 12 * HOUR + 25 * 60_000)}`, stranger);
    assert.deepEqual(short.map((row) => [row.distance, row.startOdometer, row.endOdometer]), [[28_500 + 600, 30_000, 30_600]], 'a window inside one hour');
  });

  it('summary?daily=true cuts at local midnight of the caller\'s timezone (Asia/Kolkata: between UTC hours)', async () => {
    await insertReportRows(db, { hours: [summaryHourRow(devices.daily, D1 + 17 * HOUR), summaryHourRow(devices.daily, D1 + 20 * HOUR)] });
    const device = await tracker('356307042449003');
    await device.send(fix(D1 + 18 * HOUR + 10 * 60_000, { odometer: 5000 }), fix(D1 + 18 * HOUR + 50 * 60_000, { odometer: 5800 }));
    await device.close();
    const daily = await rows(`/api/reports/summary?deviceId=${devices.daily}&${DAY_WINDOW}&daily=true`, traveller);
    assert.deepEqual(
      daily.map((row) => [row.startTime, row.endTime, row.distance]),
      [
        // 2 March in Kolkata ends at 18:30 UTC: the 17:00 hour, then the position at 18:10.
        [iso(D1 + 17 * HOUR + 60_000), iso(D1 + 18 * HOUR + 10 * 60_000), 10_000],
        // 3 March: the position at 18:50 (800 m on from 18:10), then the 20:00 hour.
        [iso(D1 + 18 * HOUR + 50 * 60_000), iso(D1 + 20 * HOUR + 3_540_000), 10_800],
      ],
    );
    const csv = parseCsv((await get(server, `/api/reports/summary?deviceId=${devices.daily}&${DAY_WINDOW}&daily=1&format=csv`, traveller)).body);
    assert.deepEqual(csv.slice(1).map((record) => record[2]), ['2025-03-02T22:31:00.000+05:30', '2025-03-03T00:20:00.000+05:30']);
  });

  it('route and events: the positions and events of the window in the API\'s shapes, as /api/positions and /api/events serve them', async () => {
    const from = D1 + 9 * HOUR;
    const to = D1 + 13 * HOUR;
    const route = await rows(`/api/reports/route?deviceId=${devices.summary}&${window(from, to)}`, stranger);
    const history = (await get(server, `/api/positions?deviceId=${devices.summary}&${window(from, to)}`, stranger)).json() as Row[];
    assert.equal(route.length, 4);
    assert.deepEqual(route, history);
    const events = await rows(`/api/reports/events?${window(from, to)}`, stranger);
    const listed = (await get(server, `/api/events?deviceId=${devices.summary}&${window(from, to)}`, stranger)).json() as Row[];
    assert.deepEqual(events.filter((event) => event.deviceId === devices.summary), listed);
    const csv = parseCsv((await get(server, `/api/reports/route?deviceId=${devices.summary}&${window(from, to)}`, stranger, { accept: 'text/csv' })).body);
    assert.deepEqual(csv[0]?.slice(0, 6), ['id', 'deviceId', 'protocol', 'serverTime (UTC)', 'deviceTime (UTC)', 'fixTime (UTC)']);
    assert.deepEqual(csv.slice(1).map((record) => Number(record[0])), route.map((position) => position.id));
  });

  it('geofences: each enter paired with its exit, a visit overlapping the window whole (one spanning it too), one still inside without an exit', async () => {
    const created = await server.app.inject({ method: 'POST', url: '/api/geofences/', headers: stranger.authorization, payload: { name: 'Depot', area: 'CIRCLE (52.5 13.5, 500)' } });
    assert.equal(created.statusCode, 201, created.body);
    const geofenceId = created.json().id as number;
    const device = await tracker('356307042449002');
    const at = (minutes: number) => D1 + 14 * HOUR + minutes * 60_000;
    const outside = { latitude: 52.5, longitude: 13.4 };
    const inside = { latitude: 52.5, longitude: 13.5 };
    await device.send(fix(at(0), outside), fix(at(10), inside), fix(at(20), inside), fix(at(30), outside), fix(at(40), inside));
    await device.close();
    const events = ((await get(server, `/api/events?deviceId=${devices.fences}&${window(at(0), at(60))}`, stranger)).json() as Row[]).filter((event) =>
      ['geofenceEnter', 'geofenceExit'].includes(event.type as string),
    );
    assert.deepEqual(events.map((event) => event.type), ['geofenceEnter', 'geofenceExit', 'geofenceEnter']);
    const visits = await rows(`/api/reports/geofences?deviceId=${devices.fences}&${window(at(0), at(60))}`, stranger);
    assert.deepEqual(visits, [
      { deviceId: devices.fences, geofenceId, geofenceName: 'Depot', enterTime: iso(at(10)), exitTime: iso(at(30)), duration: 20 * 60_000 },
      { deviceId: devices.fences, geofenceId, geofenceName: 'Depot', enterTime: iso(at(40)), exitTime: null, duration: null },
    ]);
    const middle = await rows(`/api/reports/geofences?deviceId=${devices.fences}&${window(at(15), at(25))}`, stranger);
    assert.deepEqual(middle, [visits[0]], 'a visit under way across the whole window, with no event inside it, is found by its enter before');
    const still = await rows(`/api/reports/geofences?deviceId=${devices.fences}&${window(at(50), at(60))}`, stranger);
    assert.deepEqual(still, [visits[1]], 'a device still inside since before the window');
    const tail = await rows(`/api/reports/geofences?deviceId=${devices.fences}&${window(at(25), at(35))}`, stranger);
    assert.deepEqual(tail, [visits[0]], 'an exit in the window brings its visit whole');
    const head = await rows(`/api/reports/geofences?deviceId=${devices.fences}&${window(at(5), at(15))}`, stranger);
    assert.deepEqual(head, [visits[0]], 'an enter in the window brings its visit whole');
  });
});
