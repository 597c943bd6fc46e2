import path from 'node:path';
import { ConfigError, EnvReader } from './platform/env.ts';
import type { Env } from './platform/env.ts';
import { PROTOCOL_REGISTRY } from './services/tracking/protocols/registry.ts';
import type { DeviceProtocol } from './services/tracking/protocols/registry.ts';
import { DEFAULT_WORK_SETTINGS } from './platform/work/queue.ts';
import type { WorkSettings } from './platform/work/queue.ts';
import { readAuthSettings } from './services/auth/settings.ts';
import type { AuthSettings } from './services/auth/settings.ts';
import { readBillingSettings } from './services/billing/settings.ts';
import type { BillingSettings } from './services/billing/settings.ts';
import { readDevicesSettings } from './services/devices/settings.ts';
import type { DevicesSettings } from './services/devices/settings.ts';
import { readNotificationsSettings } from './services/notifications/settings.ts';
import type { NotificationsSettings } from './services/notifications/settings.ts';
import { readTrackingSettings } from './services/tracking/settings.ts';
import type { TrackingSettings } from './services/tracking/settings.ts';

export { ConfigError, isLoopbackHost } from './platform/env.ts';

export const SERVICE_NAMES = ['auth', 'devices', 'tracking', 'billing', 'notifications'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];
type Role = ServiceName | 'gateway';

export type DatabaseConfig =
  | { engine: 'sqlite'; file: string } // file ':memory:' for an in-memory database
  | { engine: 'postgres'; url: string };

/** The settings of the process as a whole: its listeners, stores, roles and what several modules share. */
export interface ProcessConfig {
  port: number;
  host: string;
  dataDir: string;
  database: DatabaseConfig;
  redisUrl: string | undefined;
  /** The Redis pub/sub channel of this deployment's domain events. */
  eventChannel: string;
  logLevel: string;
  services: ServiceName[];
  gateway: boolean;
  upstreams: Partial<Record<ServiceName, string>>;
  internalToken: string | undefined;
  publicUrl: string;
  webUrl: string;
  /** The web app's map style (MapLibre style JSON): an http(s) URL or a path on this server. */
  mapStyleUrl: string;
  appScheme: string;
  /** Product name shown in mails and authenticator apps. */
  appName: string;
  trustProxy: string | undefined;
  bodyLimit: number;
  rateLimits: boolean;
  mail: { smtpUrl: string | undefined; from: string };
  /** The Prometheus listener (METRICS_PORT, METRICS_HOST); port 0 turns it off. */
  metrics: { port: number; host: string };
  /** Server-wide caps on what one user may hold, bounding the cost of one request and one position; administrators are exempt. */
  limits: ServerLimits;
  /** Durable work (the outbox; docs/architecture.md, "Durable work"): QUEUE_MAX_ATTEMPTS, QUEUE_HANDLER_TIMEOUT and QUEUE_LEASE (ms). */
  work: WorkSettings;
  /** DRAIN_DELAY: seconds between SIGTERM's health turning `ready: false` and the listeners closing (docs/operations.md). */
  drainDelay: number;
}

/** The ports of the device listeners, one per protocol (0: not listened on). */
export interface DevicePortsConfig {
  /** Each device protocol's listener port (its registry entry's variable, e.g. GT06_PORT); 0 leaves it closed. */
  devicePorts: Record<DeviceProtocol, number>;
}

/** Everything a process reads from its environment: its own settings and every module's (each declared in the module's settings.ts). */
export interface Config extends ProcessConfig, AuthSettings, DevicesSettings, TrackingSettings, BillingSettings, NotificationsSettings, DevicePortsConfig {}

/**
 * Each module's settings reader, by module. Every process reads them all, whatever it runs, so a bad
 * value is refused at start wherever it is set. They are apart from the module descriptors so that
 * reading the configuration loads no module.
 */
const MODULE_SETTINGS = {
  auth: readAuthSettings,
  devices: readDevicesSettings,
  tracking: readTrackingSettings,
  billing: readBillingSettings,
  notifications: readNotificationsSettings,
} satisfies Record<ServiceName, (read: EnvReader, process: ProcessConfig) => object>;

export interface ServerLimits {
  /** MAX_DEVICES_PER_USER: devices one user owns. */
  devicesPerUser: number;
  /** MAX_SHARES_PER_DEVICE: users (and pending addresses) one device is shared with. */
  sharesPerDevice: number;
  /** MAX_GEOFENCES_PER_USER: geofences one user owns. */
  geofencesPerUser: number;
  /** MAX_GEOFENCE_POINTS_PER_USER: points of all of one user's geofence areas together. */
  geofencePointsPerUser: number;
}

/** Reads every variable once, validating as it goes; the first bad value throws ConfigError. */
export function loadConfig(env: Env = process.env): Config {
  const read = new EnvReader(env);
  const processConfig = readProcessConfig(read);
  const modules = SERVICE_NAMES.map((name) => MODULE_SETTINGS[name](read, processConfig));
  return Object.assign({}, processConfig, ...modules, readDevicePorts(read)) as Config;
}

function readProcessConfig(read: EnvReader): ProcessConfig {
  const port = read.int('PORT', 8080, 0, 65535);
  const host = read.string('HOST', '127.0.0.1');
  const dataDir = path.resolve(read.string('DATA_DIR', './data'));
  const publicUrl = read.url('PUBLIC_URL', `http://localhost:${port}`, ['http:', 'https:']).replace(/\/$/, '');
  const webUrl = read.url('WEB_URL', publicUrl, ['http:', 'https:']).replace(/\/$/, '');
  const roles = readRoles(read);
  const services = SERVICE_NAMES.filter((name) => roles.includes(name));
  const gateway = roles.includes('gateway');
  const upstreams: Partial<Record<ServiceName, string>> = {};
  for (const name of SERVICE_NAMES) {
    const variable = `${name === 'devices' ? 'DEVICES' : name.toUpperCase()}_URL`;
    const url = read.optionalUrl(variable, ['http:', 'https:']);
    if (url) upstreams[name] = url.replace(/\/$/, '');
    if (gateway && !services.includes(name) && !url) {
      throw new ConfigError(variable, `required when SERVICES runs the gateway without ${name}`);
    }
  }
  return {
    port,
    host,
    dataDir,
    database: readDatabase(read, dataDir),
    redisUrl: read.optionalUrl('REDIS_URL', ['redis:', 'rediss:']),
    eventChannel: read.matching('EVENT_CHANNEL', 'trackstack:events', /^[\w:.-]{1,128}$/, 'letters, digits and : . _ - (at most 128)'),
    logLevel: read.oneOf('LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    services,
    gateway,
    upstreams,
    internalToken: read.secret('INTERNAL_TOKEN', 32),
    publicUrl,
    webUrl,
    mapStyleUrl: read.matching('MAP_STYLE_URL', '/map-styles/osm.json', /^(https?:\/\/|\/)[^\s"<>]+$/, 'an http(s) URL or a path on this server'),
    appScheme: read.matching('APP_SCHEME', 'trackstack', /^[a-z][a-z0-9+.-]*$/i, 'a URI scheme such as myapp'),
    appName: read.string('APP_NAME', 'Trackstack'),
    trustProxy: read.optional('TRUST_PROXY'),
    bodyLimit: read.int('BODY_LIMIT', 1_048_576, 1024, 100 * 1_048_576),
    rateLimits: read.oneOf('RATE_LIMITS', 'on', ['on', 'off']) === 'on',
    mail: {
      smtpUrl: read.optionalUrl('SMTP_URL', ['smtp:', 'smtps:']),
      from: read.string('MAIL_FROM', 'Trackstack <no-reply@localhost>'),
    },
    metrics: { port: read.int('METRICS_PORT', 9464, 0, 65535), host: read.string('METRICS_HOST', '127.0.0.1') },
    limits: {
      devicesPerUser: read.int('MAX_DEVICES_PER_USER', 5000, 1, 1_000_000),
      sharesPerDevice: read.int('MAX_SHARES_PER_DEVICE', 100, 1, 100_000),
      geofencesPerUser: read.int('MAX_GEOFENCES_PER_USER', 1000, 1, 1_000_000),
      geofencePointsPerUser: read.int('MAX_GEOFENCE_POINTS_PER_USER', 100_000, 1, 100_000_000),
    },
    work: {
      maxAttempts: read.int('QUEUE_MAX_ATTEMPTS', DEFAULT_WORK_SETTINGS.maxAttempts, 1, 1000),
      handlerTimeoutMs: read.int('QUEUE_HANDLER_TIMEOUT', DEFAULT_WORK_SETTINGS.handlerTimeoutMs, 100, 3_600_000),
      leaseMs: read.int('QUEUE_LEASE', DEFAULT_WORK_SETTINGS.leaseMs, 100, 600_000),
    },
    drainDelay: read.int('DRAIN_DELAY', 0, 0, 300),
  };
}

function readRoles(read: EnvReader): Role[] {
  const raw = read.optional('SERVICES');
  const all: Role[] = [...SERVICE_NAMES, 'gateway'];
  if (raw === undefined || raw === 'all') return all;
  const roles = raw.split(',').map((item) => item.trim().toLowerCase()).filter(Boolean);
  for (const role of roles) {
    if (!all.includes(role as Role)) throw new ConfigError('SERVICES', `unknown service '${role}' (use ${all.join(', ')})`);
  }
  if (roles.length === 0) throw new ConfigError('SERVICES', 'names no service');
  return roles as Role[];
}

function readDatabase(read: EnvReader, dataDir: string): DatabaseConfig {
  const raw = read.optional('DATABASE_URL') ?? `sqlite:${path.join(dataDir, 'trackstack.db')}`;
  if (/^postgres(ql)?:\/\//i.test(raw)) {
    try {
      new URL(raw);
    } catch {
      throw new ConfigError('DATABASE_URL', 'not a valid postgres:// URL');
    }
    return { engine: 'postgres', url: raw };
  }
  if (/^sqlite:/i.test(raw)) {
    const rest = raw.slice('sqlite:'.length);
    if (rest === ':memory:' || rest === '//:memory:') return { engine: 'sqlite', file: ':memory:' };
    // sqlite:///abs/path and sqlite://rel/path follow the URL convention; sqlite:path is a plain path.
    const file = rest.startsWith('//') ? rest.slice(2) : rest;
    if (file === '') throw new ConfigError('DATABASE_URL', 'sqlite: needs a file path or :memory:');
    return { engine: 'sqlite', file: path.resolve(file) };
  }
  throw new ConfigError('DATABASE_URL', `expected sqlite:<path>, sqlite::memory: or postgres://…, got '${raw.split(':')[0]}:…'`);
}

/** The device listeners' ports (the tracking module's), one per entry of the protocol registry. */
function readDevicePorts(read: EnvReader): DevicePortsConfig {
  return {
    devicePorts: Object.fromEntries(PROTOCOL_REGISTRY.map(({ name, port }) => [name, read.int(port.variable, port.default, 0, 65535)])) as Record<DeviceProtocol, number>,
  };
}
