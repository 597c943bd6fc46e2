import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';
import { PROTOCOL_REGISTRY } from '../src/services/tracking/protocols/registry.ts';

function failure(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    return error;
  }
  assert.fail(`expected ${JSON.stringify(env)} to be refused`);
}

describe('config', () => {
  it('gives the embedded single-node defaults', () => {
    const config = loadConfig({});
    assert.equal(config.port, 8080);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.dataDir, path.resolve('data'));
    assert.deepEqual(config.database, { engine: 'sqlite', file: path.resolve('data/trackstack.db') });
    assert.deepEqual(config.services, ['auth', 'devices', 'tracking', 'billing', 'notifications']);
    assert.equal(config.gateway, true);
    assert.equal(config.publicUrl, 'http://localhost:8080');
    assert.equal(config.webUrl, 'http://localhost:8080');
    assert.equal(config.appScheme, 'trackstack');
    assert.equal(config.mapStyleUrl, '/map-styles/osm.json');
    assert.equal(config.ttl.accessToken, 3600);
    assert.equal(config.ttl.refreshToken, 2_592_000);
    assert.equal(config.ttl.twoFactorTempToken, 300);
    assert.equal(config.ttl.totpSetup, 600);
    assert.equal(config.rateLimits, true);
    assert.equal(config.registrationEnabled, true);
    assert.deepEqual(config.devicePorts, { osmand: 5055, gt06: 5023, teltonika: 5027, h02: 5013, jt808: 5015, gps103: 5001, tk103: 5002, wialon: 5039, watch: 5093, meitrack: 5020, suntech: 5011, ruptela: 5046, galileo: 5034, gl200: 5004 });
    assert.equal(config.statusTimeout, 600);
    assert.equal(config.apple.environment, 'Production');
    assert.equal(config.redisUrl, undefined);
  });

  it('accepts every DATABASE_URL form', () => {
    const cases: [string, unknown][] = [
      ['sqlite:data/x.db', { engine: 'sqlite', file: path.resolve('data/x.db') }],
      ['sqlite:/tmp/abs.db', { engine: 'sqlite', file: '/tmp/abs.db' }],
      ['sqlite:///tmp/abs.db', { engine: 'sqlite', file: '/tmp/abs.db' }],
      ['sqlite::memory:', { engine: 'sqlite', file: ':memory:' }],
      ['postgres://u:p@db:5432/app', { engine: 'postgres', url: 'postgres://u:p@db:5432/app' }],
      ['postgresql://db/app?sslmode=require', { engine: 'postgres', url: 'postgresql://db/app?sslmode=require' }],
    ];
    for (const [url, expected] of cases) assert.deepEqual(loadConfig({ DATABASE_URL: url }).database, expected, url);
  });

  it('derives dependent defaults', () => {
    const config = loadConfig({ PORT: '9000', OIDC_GOOGLE_CLIENT_ID: 'client-1', PUBLIC_URL: 'https://api.example.com/' });
    assert.equal(config.publicUrl, 'https://api.example.com');
    assert.equal(config.webUrl, 'https://api.example.com');
    assert.deepEqual(config.oidc.google.audiences, ['client-1']);
    assert.deepEqual(loadConfig({ PORT: '9000' }).publicUrl, 'http://localhost:9000');
  });

  it('takes GOOGLE_CERTS_URL over https, or over http on this machine only', () => {
    assert.equal(loadConfig({}).google.certsUrl, 'https://www.googleapis.com/oauth2/v1/certs');
    for (const url of ['https://certs.example.com/v1', 'http://127.0.0.1:9000/certs', 'http://localhost/certs', 'http://[::1]:1/certs']) {
      assert.equal(loadConfig({ GOOGLE_CERTS_URL: url }).google.certsUrl, url);
    }
  });

  it('parses the services subset and requires upstreams for a gateway without them', () => {
    const split = loadConfig({ SERVICES: 'auth, devices' });
    assert.deepEqual(split.services, ['auth', 'devices']);
    assert.equal(split.gateway, false);
    assert.equal(failure({ SERVICES: 'gateway,auth' }).variable, 'DEVICES_URL');
    const gateway = loadConfig({
      SERVICES: 'gateway',
      AUTH_URL: 'http://a:1',
      DEVICES_URL: 'http://d:2/',
      TRACKING_URL: 'http://t:3',
      BILLING_URL: 'http://b:4',
      NOTIFICATIONS_URL: 'http://n:5',
    });
    assert.deepEqual(gateway.services, []);
    assert.equal(gateway.upstreams.devices, 'http://d:2');
  });

  it('names the variable and the problem for every bad value', () => {
    const cases: [Record<string, string>, string, RegExp][] = [
      [{ PORT: 'abc' }, 'PORT', /whole number/],
      [{ PORT: '70000' }, 'PORT', /between 0 and 65535/],
      [{ NOTIFY_DELIVERY_LEASE: '5000', NOTIFY_SEND_TIMEOUT: '5000' }, 'NOTIFY_DELIVERY_LEASE', /longer than NOTIFY_SEND_TIMEOUT/],
      [{ NOTIFY_HOST_CONCURRENCY: '0' }, 'NOTIFY_HOST_CONCURRENCY', /between 1 and 256/],
      [{ NOTIFY_USER_CONCURRENCY: '1000' }, 'NOTIFY_USER_CONCURRENCY', /between 1 and 256/],
      [{ NOTIFY_WEBHOOK_RATE: 'many' }, 'NOTIFY_WEBHOOK_RATE', /whole number/],
      [{ NOTIFY_DELIVERY_RETENTION: '1000' }, 'NOTIFY_DELIVERY_RETENTION', /between 60000/],
      [{ DATABASE_URL: 'ftp://x' }, 'DATABASE_URL', /expected sqlite/],
      [{ DATABASE_URL: 'sqlite:' }, 'DATABASE_URL', /file path/],
      [{ REDIS_URL: 'http://x' }, 'REDIS_URL', /redis/],
      [{ SERVICES: 'auth,mail' }, 'SERVICES', /unknown service 'mail'/],
      [{ JWT_PRIVATE_KEY: '/nonexistent/key.pem' }, 'JWT_PRIVATE_KEY', /cannot read file/],
      [{ APPLE_ROOT_CERTS: '/nonexistent/root.cer' }, 'APPLE_ROOT_CERTS', /cannot read file/],
      [{ RATE_LIMITS: 'maybe' }, 'RATE_LIMITS', /on, off/],
      [{ REGISTRATION_ENABLED: 'perhaps' }, 'REGISTRATION_ENABLED', /true or false/],
      [{ ACCESS_TOKEN_TTL: '0' }, 'ACCESS_TOKEN_TTL', /between/],
      [{ PUBLIC_URL: 'not a url' }, 'PUBLIC_URL', /not a valid URL/],
      [{ INTERNAL_TOKEN: 'short' }, 'INTERNAL_TOKEN', /at least 32/],
      [{ ADMIN_EMAIL: 'a@b.c' }, 'ADMIN_PASSWORD', /required/],
      [{ APP_SCHEME: 'my app' }, 'APP_SCHEME', /URI scheme/],
      [{ MAP_STYLE_URL: 'style.json' }, 'MAP_STYLE_URL', /http\(s\) URL or a path/],
      [{ MAP_STYLE_URL: 'https://tiles.example.com/style.json"><script>' }, 'MAP_STYLE_URL', /http\(s\) URL or a path/],
      [{ APPLE_ENVIRONMENT: 'Staging' }, 'APPLE_ENVIRONMENT', /Production/],
      [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL', /info/],
      [{ GOOGLE_CERTS_URL: 'http://certs.example.com/oauth2/v1/certs' }, 'GOOGLE_CERTS_URL', /must be an https URL/],
      [{ GOOGLE_CERTS_URL: 'ftp://certs.example.com/' }, 'GOOGLE_CERTS_URL', /expected a http: or https: URL/],
    ];
    for (const [env, variable, problem] of cases) {
      const error = failure(env);
      assert.equal(error.variable, variable, JSON.stringify(env));
      assert.match(error.message, problem, JSON.stringify(env));
      assert.ok(error.message.startsWith(`${variable}: `));
    }
  });

  it('stops the process with one line naming the variable', () => {
    const result = spawnSync(process.execPath, [path.resolve('src/main.ts')], {
      env: { PATH: process.env.PATH, PORT: 'abc' },
      encoding: 'utf8',
      cwd: path.resolve('test'),
      timeout: 20_000,
    });
    assert.equal(result.status, 1);
    assert.equal(result.stdout, '');
    assert.equal(result.stderr.trim().split('\n').length, 1);
    assert.equal(result.stderr.trim(), "Configuration error: PORT: expected a whole number, got 'abc'");
  });

  it('reads .env from the working directory when present', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'trackstack-env-'));
    try {
      writeFileSync(path.join(dir, '.env'), 'DATABASE_URL=ftp://from-dotenv\n');
      const result = spawnSync(process.execPath, [path.resolve('src/main.ts')], {
        env: { PATH: process.env.PATH },
        encoding: 'utf8',
        cwd: dir,
        timeout: 20_000,
      });
      assert.equal(result.status, 1);
      assert.match(result.stderr, /^Configuration error: DATABASE_URL: /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('documents every variable in .env.example, the process-wide ones and each module\'s', () => {
    const moduleSettings = readdirSync(path.resolve('src/services')).map((module) => path.resolve('src/services', module, 'settings.ts'));
    const source = ['src/config.ts', ...moduleSettings].map((file) => readFileSync(path.resolve(file), 'utf8')).join('\n');
    const example = readFileSync(path.resolve('.env.example'), 'utf8');
    const variables = new Set([...source.matchAll(/\(\s*'([A-Z][A-Z0-9_]+)'/g)].map((match) => match[1]!));
    // The device ports are read by the protocol registry's variables.
    for (const { port } of PROTOCOL_REGISTRY) variables.add(port.variable);
    assert.ok(variables.size > 100);
    for (const variable of variables) assert.match(example, new RegExp(`^# ${variable}=`, 'm'), variable);
  });

  it('reads the server limits, with defaults an operator can raise', () => {
    assert.deepEqual(loadConfig({}).limits, { devicesPerUser: 5000, sharesPerDevice: 100, geofencesPerUser: 1000, geofencePointsPerUser: 100_000 });
    const raised = loadConfig({ MAX_DEVICES_PER_USER: '20000', MAX_SHARES_PER_DEVICE: '7', MAX_GEOFENCES_PER_USER: '5', MAX_GEOFENCE_POINTS_PER_USER: '50' });
    assert.deepEqual(raised.limits, { devicesPerUser: 20_000, sharesPerDevice: 7, geofencesPerUser: 5, geofencePointsPerUser: 50 });
    assert.equal(failure({ MAX_DEVICES_PER_USER: '0' }).variable, 'MAX_DEVICES_PER_USER');
    assert.equal(failure({ MAX_GEOFENCE_POINTS_PER_USER: 'lots' }).variable, 'MAX_GEOFENCE_POINTS_PER_USER');
  });

  it('reads the retention job settings, refusing values out of range', () => {
    assert.deepEqual(loadConfig({}).retention, { interval: 3600, chunkSize: 5000 });
    assert.deepEqual(loadConfig({ RETENTION_INTERVAL: '0', RETENTION_CHUNK: '100' }).retention, { interval: 0, chunkSize: 100 });
    assert.equal(failure({ RETENTION_INTERVAL: '604801' }).variable, 'RETENTION_INTERVAL');
    assert.equal(failure({ RETENTION_INTERVAL: '-1' }).variable, 'RETENTION_INTERVAL');
    assert.equal(failure({ RETENTION_CHUNK: '99' }).variable, 'RETENTION_CHUNK');
    assert.equal(failure({ RETENTION_CHUNK: 'many' }).variable, 'RETENTION_CHUNK');
  });

  it('reads the segmentation switch and delay, refusing anything else', () => {
    assert.deepEqual(loadConfig({}).segmentation, { enabled: true, delayMs: 5000 });
    assert.deepEqual(loadConfig({ REPORTS_SEGMENTATION: 'OFF', REPORTS_SEGMENTATION_DELAY: '0' }).segmentation, { enabled: false, delayMs: 0 });
    assert.equal(failure({ REPORTS_SEGMENTATION: 'false' }).variable, 'REPORTS_SEGMENTATION');
    assert.equal(failure({ REPORTS_SEGMENTATION_DELAY: '60001' }).variable, 'REPORTS_SEGMENTATION_DELAY');
  });

  it('reads the command limits, refusing values out of range', () => {
    assert.deepEqual(loadConfig({}).commands, { queuedPerDevice: 100, sendsPerMinute: 120, historyDays: 90 });
    assert.deepEqual(loadConfig({ MAX_QUEUED_COMMANDS_PER_DEVICE: '5', COMMAND_SEND_RATE: '10', COMMAND_HISTORY_DAYS: '0' }).commands, { queuedPerDevice: 5, sendsPerMinute: 10, historyDays: 0 });
    assert.equal(failure({ MAX_QUEUED_COMMANDS_PER_DEVICE: '0' }).variable, 'MAX_QUEUED_COMMANDS_PER_DEVICE');
    assert.equal(failure({ COMMAND_SEND_RATE: 'fast' }).variable, 'COMMAND_SEND_RATE');
    assert.equal(failure({ COMMAND_HISTORY_DAYS: '-1' }).variable, 'COMMAND_HISTORY_DAYS');
  });

  it('reads the durable-work settings, refusing values out of range', () => {
    assert.deepEqual(loadConfig({}).work, { maxAttempts: 20, handlerTimeoutMs: 120_000, leaseMs: 10_000 });
    assert.deepEqual(loadConfig({ QUEUE_MAX_ATTEMPTS: '1', QUEUE_HANDLER_TIMEOUT: '100', QUEUE_LEASE: '600000' }).work, { maxAttempts: 1, handlerTimeoutMs: 100, leaseMs: 600_000 });
    assert.equal(failure({ QUEUE_MAX_ATTEMPTS: '0' }).variable, 'QUEUE_MAX_ATTEMPTS');
    assert.equal(failure({ QUEUE_MAX_ATTEMPTS: '1001' }).variable, 'QUEUE_MAX_ATTEMPTS');
    assert.equal(failure({ QUEUE_HANDLER_TIMEOUT: '99' }).variable, 'QUEUE_HANDLER_TIMEOUT');
    assert.equal(failure({ QUEUE_LEASE: 'long' }).variable, 'QUEUE_LEASE');
  });

  it('reads DEVICE_REGISTRATION: open by default, or claim-only', () => {
    assert.equal(loadConfig({}).deviceRegistration, 'open');
    assert.equal(loadConfig({ DEVICE_REGISTRATION: 'Claim-Only' }).deviceRegistration, 'claim-only');
    assert.equal(failure({ DEVICE_REGISTRATION: 'closed' }).variable, 'DEVICE_REGISTRATION');
  });

  it('reads the push providers: Web Push subject from MAIL_FROM, origins for FCM and APNs', () => {
    const defaults = loadConfig({ MAIL_FROM: 'Acme Tracking <alerts@acme.example>' }).push;
    assert.deepEqual(defaults.vapid, { publicKey: undefined, privateKey: undefined, subject: 'mailto:alerts@acme.example' });
    assert.deepEqual(defaults.fcm, { serviceAccount: undefined, url: 'https://fcm.googleapis.com' });
    assert.equal(defaults.apns.url, 'https://api.push.apple.com');
    assert.equal(loadConfig({ MAIL_FROM: 'ops@acme.example' }).push.vapid.subject, 'mailto:ops@acme.example');
    const configured = loadConfig({
      VAPID_PUBLIC_KEY: Buffer.alloc(65, 4).toString('base64url'),
      VAPID_PRIVATE_KEY: Buffer.alloc(32, 1).toString('base64url'),
      VAPID_SUBJECT: 'https://acme.example/contact',
      FCM_SERVICE_ACCOUNT: '{"project_id":"p"}',
      FCM_URL: 'http://127.0.0.1:9000/',
      APNS_KEY: '-----BEGIN PRIVATE KEY-----\\nabc\\n-----END PRIVATE KEY-----',
      APNS_KEY_ID: 'KEY1',
      APNS_TEAM_ID: 'TEAM1',
      APNS_TOPIC: 'com.acme.app',
      APNS_URL: 'https://api.sandbox.push.apple.com',
    }).push;
    assert.equal(configured.vapid.subject, 'https://acme.example/contact');
    assert.deepEqual(configured.fcm, { serviceAccount: '{"project_id":"p"}', url: 'http://127.0.0.1:9000' });
    assert.equal(configured.apns.keyPem, '-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----');
    assert.equal(configured.apns.url, 'https://api.sandbox.push.apple.com');
  });

  it('reads FCM_SERVICE_ACCOUNT from a file', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'trackstack-fcm-'));
    try {
      const file = path.join(dir, 'service-account.json');
      writeFileSync(file, '{"project_id":"from-file"}');
      assert.equal(loadConfig({ FCM_SERVICE_ACCOUNT: file }).push.fcm.serviceAccount, '{"project_id":"from-file"}');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad push provider variables, naming the variable', () => {
    const publicKey = Buffer.alloc(65, 4).toString('base64url');
    const cases: [Record<string, string>, string, RegExp][] = [
      [{ VAPID_PUBLIC_KEY: publicKey }, 'VAPID_PRIVATE_KEY', /required/],
      [{ VAPID_PRIVATE_KEY: Buffer.alloc(32, 1).toString('base64url') }, 'VAPID_PUBLIC_KEY', /required/],
      [{ VAPID_PUBLIC_KEY: 'too-short' }, 'VAPID_PUBLIC_KEY', /65 bytes/],
      [{ VAPID_PUBLIC_KEY: publicKey, VAPID_PRIVATE_KEY: 'a+b/c=' }, 'VAPID_PRIVATE_KEY', /32 bytes/],
      [{ VAPID_SUBJECT: 'http://acme.example' }, 'VAPID_SUBJECT', /mailto/],
      [{ MAIL_FROM: 'Trackstack <not an address>' }, 'VAPID_SUBJECT', /mailto/],
      [{ FCM_SERVICE_ACCOUNT: '/nonexistent/account.json' }, 'FCM_SERVICE_ACCOUNT', /cannot read file/],
      [{ FCM_URL: 'https://fcm.example.com/v1' }, 'FCM_URL', /origin/],
      [{ FCM_URL: 'http://fcm.example.com' }, 'FCM_URL', /https/],
      [{ APNS_URL: 'https://api.push.apple.com/3/device' }, 'APNS_URL', /origin/],
      [{ APNS_KEY_ID: 'KEY1' }, 'APNS_KEY', /required/],
      [{ APNS_KEY: '-----BEGIN PRIVATE KEY-----x', APNS_KEY_ID: 'K', APNS_TEAM_ID: 'T' }, 'APNS_TOPIC', /required/],
      [{ APNS_KEY: '/nonexistent/AuthKey.p8' }, 'APNS_KEY', /cannot read file/],
    ];
    for (const [env, variable, problem] of cases) {
      const error = failure(env);
      assert.equal(error.variable, variable, JSON.stringify(env));
      assert.match(error.message, problem, JSON.stringify(env));
    }
  });
});
