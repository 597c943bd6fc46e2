import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import type { ApiError} from '../../src/client/index.ts';
import { LoggedOutError, TrackstackClient } from '../../src/client/index.ts';
import { describeEachEngine } from '../support/engines.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import type { Kysely } from 'kysely';
import type { TrackingTables } from '../../src/services/tracking/tables.ts';
import { insertReportRows, tripRow } from '../factories/report.ts';
import { parseCsv, readXlsx } from '../services/tracking/reports/support.ts';

const PASSWORD = 'Sturdy-Lantern-42';

interface Call {
  method: string;
  path: string;
  authorization: string | null;
  retry: string | null;
  contentType: string | null;
}

/**
 * fetch with a browser's cookie jar: keeps what Set-Cookie says (by name and path) and sends the
 * cookies whose path the request falls under, which is all a browser does for a same-origin page.
 */
function browserLikeFetch() {
  const jar = new Map<string, { value: string; path: string }>();
  const calls: Call[] = [];
  const fetchImpl: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    const headers = new Headers(init?.headers);
    const cookies = [...jar].filter(([, cookie]) => url.pathname.startsWith(cookie.path)).map(([name, cookie]) => `${name}=${cookie.value}`);
    if (cookies.length > 0) headers.set('cookie', cookies.join('; '));
    calls.push({
      method: init?.method ?? 'GET',
      path: url.pathname,
      authorization: headers.get('authorization'),
      retry: headers.get('authorization-retry'),
      contentType: headers.get('content-type'),
    });
    const response = await fetch(input, { ...init, headers });
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';').map((part) => part.trim());
      const name = pair.slice(0, pair.indexOf('='));
      const value = pair.slice(pair.indexOf('=') + 1);
      const path = attributes.find((attribute) => attribute.toLowerCase().startsWith('path='))?.slice(5) ?? '/';
      if (value === '' || attributes.some((attribute) => /^max-age=0$/i.test(attribute) || /^expires=thu, 01 jan 1970/i.test(attribute))) jar.delete(name);
      else jar.set(name, { value, path });
    }
    return response;
  };
  return { jar, calls, fetchImpl };
}

describeEachEngine('client SDK: cookie sessions and the devices and tracking calls', (engine) => {
  let server: TestServer;
  let baseUrl: string;

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off' });
    await server.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(server.app.server.address() as AddressInfo).port}`;
  });
  after(() => server.dispose());

  async function signedIn(email: string, onLoggedOut?: () => void) {
    const user = await server.auth!.api.accounts.create({ email, password: PASSWORD, emailVerified: true });
    const browser = browserLikeFetch();
    const client = new TrackstackClient({ baseUrl, session: 'cookies', fetch: browser.fetchImpl, onLoggedOut });
    assert.equal((await client.login(email, PASSWORD)).kind, 'signed-in');
    return { client, userId: user.id, ...browser };
  }

  it('keeps no token: the HttpOnly cookies carry the session, and a change without a body still goes as JSON', async () => {
    const { client, jar, calls, userId } = await signedIn('cookie-session@example.com');
    assert.equal(await client.isLoggedIn(), false, 'the client holds no token');
    assert.ok(jar.has('access_token') && jar.has('refresh_token'));
    assert.equal((await client.profile()).id, userId);
    assert.equal(typeof (await client.twoFactorSetup()).secret, 'string', 'the CSRF guard lets a JSON change through');
    assert.ok(calls.every((call) => call.authorization === null), 'no Authorization header, ever');
    assert.equal(calls.find((call) => call.path === '/api/auth/2fa/setup')?.contentType, 'application/json');
  });

  it('on a 401 refreshes with the refresh_token cookie once, shared by concurrent requests, and retries marked Authorization-Retry', async () => {
    const email = 'cookie-refresh@example.com';
    const { client, jar, calls, userId } = await signedIn(email);
    const stale = await server.login({ email });
    await server.auth!.api.sessions.revoke(stale.sessionId);
    jar.set('access_token', { value: stale.token, path: '/' });
    calls.length = 0;
    const profiles = await Promise.all([client.profile(), client.profile(), client.profile()]);
    assert.ok(profiles.every((profile) => profile.id === userId));
    assert.equal(calls.filter((call) => call.path === '/api/auth/refresh').length, 1);
    assert.equal(calls.filter((call) => call.retry === 'true').length, 3);
    assert.notEqual(jar.get('access_token')?.value, stale.token, 'the refresh set a new access_token cookie');
    calls.length = 0;
    assert.equal((await client.profile()).id, userId);
    assert.deepEqual(calls.map((call) => call.path), ['/api/auth/profile'], 'the new cookie works without another refresh');
  });

  it('a refused refresh reports logged-out', async () => {
    let loggedOut = 0;
    const { client, userId } = await signedIn('cookie-refused@example.com', () => loggedOut++);
    await server.auth!.api.sessions.revokeAllOfUser(userId);
    await assert.rejects(client.devices(), LoggedOutError);
    assert.equal(loggedOut, 1);
  });

  it('speaks devices, claim tokens, positions, events and geofences', async () => {
    const { client } = await signedIn('cookie-tracking@example.com');
    const device = await client.createDevice({ name: 'Van', uniqueId: 'sdk-van-1' });
    assert.deepEqual((await client.devices()).map((item) => item.id), [device.id]);
    assert.equal((await client.updateDevice(device.id, { name: 'Van 2', phone: null })).name, 'Van 2');
    assert.deepEqual(await client.latestPositions(device.id), []);
    assert.deepEqual(await client.history(device.id, new Date(Date.now() - 3_600_000), new Date()), []);
    assert.deepEqual(await client.events({ deviceId: device.id, type: ['geofenceEnter', 'geofenceExit'] }), []);
    const preview = await client.validateClaimToken('ZZZZ-ZZZZ-ZZZZ');
    assert.equal(preview.success ? 'valid' : preview.errorCode, 'TOKEN_INVALID');
    await assert.rejects(client.claimDevice('ZZZZ-ZZZZ-ZZZZ'), (error: ApiError) => error.status === 404 && error.code === 'CLAIM_TOKEN_NOT_FOUND');

    const geofence = await client.createGeofence({ name: 'Depot', area: 'CIRCLE (48.85 2.35, 100)' });
    assert.equal((await client.updateGeofence(geofence.id, { name: 'Yard' })).name, 'Yard');
    await assert.rejects(client.createGeofence({ name: 'Bad', area: 'CIRCLE (1 2)' }), (error: ApiError) => error.code === 'INVALID_AREA');
    await client.deleteGeofence(geofence.id);
    assert.deepEqual(await client.geofences(), []);

    await client.deleteDevice(device.id);
    assert.deepEqual(await client.devices(), []);
    assert.equal(client.socketUrl(), `${baseUrl.replace('http:', 'ws:')}/api/socket`);
  });

  it('speaks every report route and downloads a report as CSV or XLSX, with the refresh rule', async () => {
    const email = 'cookie-reports@example.com';
    const { client, jar, calls } = await signedIn(email);
    const device = await client.createDevice({ name: 'Truck', uniqueId: 'sdk-truck-1' });
    const start = Date.parse('2025-03-02T08:00:00.000Z');
    await insertReportRows(server.database!.db as Kysely<TrackingTables>, { trips: [tripRow(device.id, start, start + 3_600_000)] });
    const query = { deviceIds: [device.id], from: new Date(start - 86_400_000), to: new Date(start + 86_400_000) };
    const [trip] = await client.tripsReport(query);
    assert.deepEqual([trip?.deviceName, trip?.startTime, trip?.duration, trip?.ongoing], ['Truck', new Date(start).toISOString(), 3_600_000, false]);
    assert.deepEqual(await client.tripsReport({ from: query.from, to: query.to }), [trip as object], 'no deviceIds: every visible device');
    assert.deepEqual(await client.stopsReport(query), []);
    assert.deepEqual(await client.summaryReport({ ...query, daily: true }), []);
    assert.deepEqual(await client.routeReport(query), []);
    assert.deepEqual(await client.eventsReport(query), []);
    assert.deepEqual(await client.geofencesReport(query), []);
    await assert.rejects(client.tripsReport({ ...query, from: query.to, to: query.from }), (error: ApiError) => error.status === 400 && error.code === 'VALIDATION_FAILED');

    const stale = await server.login({ email });
    await server.auth!.api.sessions.revoke(stale.sessionId);
    jar.set('access_token', { value: stale.token, path: '/' });
    calls.length = 0;
    const csv = parseCsv(new TextDecoder().decode(await client.downloadReport('trips', query, 'csv')));
    assert.deepEqual([csv.length, csv[1]?.[1]], [2, 'Truck']);
    assert.deepEqual(calls.map((call) => call.path), ['/api/reports/trips', '/api/auth/refresh', '/api/reports/trips'], 'a 401 refreshes once and retries');
    const workbook = readXlsx(await client.downloadReport('summary', { ...query, daily: true }, 'xlsx'));
    assert.equal(workbook.rows[0]?.[0]?.value, 'deviceId');
    await assert.rejects(client.downloadReport('trips', { ...query, deviceIds: [999_999] }, 'csv'), (error: ApiError) => error.status === 404 && error.code === 'NOT_FOUND');
  });
});
