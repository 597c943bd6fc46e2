import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PROTOCOL_REGISTRY } from './services/tracking/protocols/registry.ts';
import type { DeviceProtocol } from './services/tracking/protocols/registry.ts';
import { DEFAULT_WORK_SETTINGS } from './platform/work/queue.ts';
import type { WorkSettings } from './platform/work/queue.ts';

/** Raised for the first bad variable; main prints its message as one line and exits. */
export class ConfigError extends Error {
  readonly variable: string;
  constructor(variable: string, problem: string) {
    super(`${variable}: ${problem}`);
    this.variable = variable;
  }
}

export const SERVICE_NAMES = ['auth', 'devices', 'tracking', 'billing', 'notifications'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];
type Role = ServiceName | 'gateway';

export type DatabaseConfig =
  | { engine: 'sqlite'; file: string } // file ':memory:' for an in-memory database
  | { engine: 'postgres'; url: string };

export interface Config {
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
  jwtPrivateKeyPem: string | undefined;
  /** Secret from which auth derives the key encrypting TOTP secrets at rest; unset → generated in DATA_DIR. */
  totpEncryptionKey: string | undefined;
  /** Product name shown in mails and authenticator apps. */
  appName: string;
  trustProxy: string | undefined;
  bodyLimit: number;
  rateLimits: boolean;
  ttl: {
    accessToken: number;
    refreshToken: number;
    twoFactorTempToken: number;
    totpSetup: number;
    passwordReset: number;
    emailVerification: number;
  };
  registrationEnabled: boolean;
  admin: { email: string; password: string } | undefined;
  mail: { smtpUrl: string | undefined; from: string };
  oidc: {
    google: { clientId: string | undefined; clientSecret: string | undefined; issuer: string; audiences: string[] };
    facebook: {
      clientId: string | undefined;
      clientSecret: string | undefined;
      authUrl: string;
      tokenUrl: string;
      userinfoUrl: string;
    };
    apple: {
      clientId: string | undefined;
      teamId: string | undefined;
      keyId: string | undefined;
      privateKeyPem: string | undefined;
      issuer: string;
    };
  };
  stripe: { webhookSecret: string | undefined };
  apple: {
    rootCertificates: Buffer[];
    bundleId: string | undefined;
    appAppleId: number | undefined;
    environment: 'Production' | 'Sandbox' | 'Xcode' | 'LocalTesting';
    /** OCSP revocation checks and certificate validity at the current time; turned off only by tests. */
    onlineChecks: boolean;
  };
  google: {
    pubsubAudience: string | undefined;
    pubsubServiceAccount: string | undefined;
    packageName: string | undefined;
    certsUrl: string;
  };
  /** Each device protocol's listener port (its registry entry's variable, e.g. GT06_PORT); 0 leaves it closed. */
  devicePorts: Record<DeviceProtocol, number>;
  statusTimeout: number;
  /** COMMAND_TTL: seconds a queued command waits for its device before it expires. */
  commandTtl: number;
  /**
   * docs/commands.md, "Limits": MAX_QUEUED_COMMANDS_PER_DEVICE commands waiting for one device, COMMAND_SEND_RATE sends
   * per user per minute, COMMAND_HISTORY_DAYS days a command stays (0: as long as its device's history).
   */
  commands: { queuedPerDevice: number; sendsPerMinute: number; historyDays: number };
  /**
   * Group commit of ingested positions: a flush writes at most `batchSize` rows, waiting at most `batchDelay` ms for them.
   * `connectionsPerIp`: device connections (every listener together) one remote address may hold open at once.
   */
  ingest: { batchSize: number; batchDelay: number; connectionsPerIp: number };
  /**
   * The retention job (docs/tracking.md, "Retention"): RETENTION_INTERVAL seconds between runs on this instance (0: this
   * instance never runs it), RETENTION_CHUNK rows deleted by one statement at most.
   */
  retention: { interval: number; chunkSize: number };
  /** EVENT_DEFAULTS: server-wide defaults of the event rules by setting name (names checked by the tracking module). */
  eventDefaults: Record<string, number | boolean>;
  /** The Prometheus listener (METRICS_PORT, METRICS_HOST); port 0 turns it off. */
  metrics: { port: number; host: string };
  /** DEVICE_REGISTRATION: `claim-only` lets non-administrators add devices only with a claim token (docs/devices.md). */
  deviceRegistration: DeviceRegistration;
  /** Server-wide caps on what one user may hold, bounding the cost of one request and one position; administrators are exempt. */
  limits: ServerLimits;
  /** The push providers of notifications (docs/notifications.md); a provider whose variables are unset is not offered. */
  push: PushConfig;
  /**
   * PLANS_FILE: the plans a subscription grants (docs/plans.md), read by the billing module; unset: one unlimited plan.
   * PLAN_GRACE_DAYS: days history is kept beyond what the owner's plan serves, so an upgrade brings it back.
   */
  plans: { file: string | undefined; graceDays: number };
  notifications: NotificationsConfig;
  /** Durable work (the outbox; docs/architecture.md, "Durable work"): QUEUE_MAX_ATTEMPTS, QUEUE_HANDLER_TIMEOUT and QUEUE_LEASE (ms). */
  work: WorkSettings;
}

export interface PushConfig {
  /** Web Push: both keys (base64url, as web-push generates them) or neither (a pair generated into DATA_DIR). */
  vapid: { publicKey: string | undefined; privateKey: string | undefined; subject: string };
  /** FCM HTTP v1: the service-account JSON (read from its file when given a path); `url` is an origin. */
  fcm: { serviceAccount: string | undefined; url: string };
  /** APNs token auth: the .p8 key's PEM, its key id, the team and the app's bundle id (topic); `url` is an origin. */
  apns: { keyPem: string | undefined; keyId: string | undefined; teamId: string | undefined; topic: string | undefined; url: string };
}

/** Notification delivery (docs/notifications.md). */
export interface NotificationsConfig {
  /** NOTIFY_ALLOW_PRIVATE_URLS: webhook URLs may reach loopback, private and link-local addresses. */
  allowPrivateUrls: boolean;
  /** NOTIFY_RETRY_DELAY: ms before a failed delivery's first retry (doubled with jitter per attempt). */
  retryDelayMs: number;
  /** NOTIFY_RETRY_WINDOW: ms during which a failing delivery is tried again before it is failed for good. */
  retryWindowMs: number;
  /** NOTIFY_DELIVERY_LEASE: ms a claimed delivery stays invisible to other workers; a crashed sender's come back after it. */
  leaseMs: number;
  /** NOTIFY_SEND_TIMEOUT: ms one attempt (a webhook call, a push request, a mail) may take. */
  sendTimeoutMs: number;
  /** NOTIFY_WEBHOOK_RATE: webhook calls one user's deliveries make per minute; the rest wait for the next minute. */
  webhookRatePerMinute: number;
  /** NOTIFY_USER_CONCURRENCY and NOTIFY_HOST_CONCURRENCY: deliveries in hand per user, and webhook calls per receiving host, in one process. */
  userConcurrency: number;
  hostConcurrency: number;
  /** NOTIFY_DELIVERY_RETENTION: ms sent, collapsed and dropped deliveries are kept (failed ones stay until their rule goes). */
  deliveryRetentionMs: number;
  /** MAX_NOTIFICATION_RULES_PER_USER and MAX_PUSH_TARGETS_PER_USER. */
  rulesPerUser: number;
  targetsPerUser: number;
}

export type DeviceRegistration = 'open' | 'claim-only';

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

type Env = Record<string, string | undefined>;

/** Hosts of this machine, the only ones a provider URL may reach over plain http. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** Reads every variable once, validating as it goes; the first bad value throws ConfigError. */
export function loadConfig(env: Env = process.env): Config {
  const read = new EnvReader(env);
  const port = read.int('PORT', 8080, 0, 65535);
  const host = read.string('HOST', '127.0.0.1');
  const dataDir = path.resolve(read.string('DATA_DIR', './data'));
  const publicUrl = read.url('PUBLIC_URL', `http://localhost:${port}`, ['http:', 'https:']).replace(/\/$/, '');
  const webUrl = read.url('WEB_URL', publicUrl, ['http:', 'https:']).replace(/\/$/, '');
  const googleClientId = read.optional('OIDC_GOOGLE_CLIENT_ID');
  const roles = read.services();
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
  const mailFrom = read.string('MAIL_FROM', 'Trackstack <no-reply@localhost>');
  const notifications = {
    allowPrivateUrls: read.bool('NOTIFY_ALLOW_PRIVATE_URLS', false),
    retryDelayMs: read.int('NOTIFY_RETRY_DELAY', 5000, 1, 3_600_000),
    retryWindowMs: read.int('NOTIFY_RETRY_WINDOW', 86_400_000, 1, 7 * 86_400_000),
    leaseMs: read.int('NOTIFY_DELIVERY_LEASE', 60_000, 100, 3_600_000),
    sendTimeoutMs: read.int('NOTIFY_SEND_TIMEOUT', 10_000, 100, 300_000),
    webhookRatePerMinute: read.int('NOTIFY_WEBHOOK_RATE', 600, 1, 1_000_000),
    userConcurrency: read.int('NOTIFY_USER_CONCURRENCY', 16, 1, 256),
    hostConcurrency: read.int('NOTIFY_HOST_CONCURRENCY', 8, 1, 256),
    deliveryRetentionMs: read.int('NOTIFY_DELIVERY_RETENTION', 7 * 86_400_000, 60_000, 365 * 86_400_000),
    rulesPerUser: read.int('MAX_NOTIFICATION_RULES_PER_USER', 1000, 1, 1_000_000),
    targetsPerUser: read.int('MAX_PUSH_TARGETS_PER_USER', 20, 1, 1000),
  };
  // A claim must outlast the send it covers, or another worker could send the same delivery meanwhile.
  if (notifications.leaseMs <= notifications.sendTimeoutMs) throw new ConfigError('NOTIFY_DELIVERY_LEASE', 'must be longer than NOTIFY_SEND_TIMEOUT');
  const adminEmail = read.optional('ADMIN_EMAIL');
  const adminPassword = read.optional('ADMIN_PASSWORD');
  if (adminEmail && !adminPassword) throw new ConfigError('ADMIN_PASSWORD', 'required when ADMIN_EMAIL is set');
  if (adminPassword && !adminEmail) throw new ConfigError('ADMIN_EMAIL', 'required when ADMIN_PASSWORD is set');

  return {
    port,
    host,
    dataDir,
    database: read.database(dataDir),
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
    jwtPrivateKeyPem: read.pem('JWT_PRIVATE_KEY'),
    totpEncryptionKey: read.secret('TOTP_ENCRYPTION_KEY', 32),
    appName: read.string('APP_NAME', 'Trackstack'),
    trustProxy: read.optional('TRUST_PROXY'),
    bodyLimit: read.int('BODY_LIMIT', 1_048_576, 1024, 100 * 1_048_576),
    rateLimits: read.oneOf('RATE_LIMITS', 'on', ['on', 'off']) === 'on',
    ttl: {
      accessToken: read.int('ACCESS_TOKEN_TTL', 3600, 1, 86_400 * 30),
      refreshToken: read.int('REFRESH_TOKEN_TTL', 2_592_000, 1, 86_400 * 3650),
      twoFactorTempToken: read.int('TWO_FACTOR_TEMP_TOKEN_TTL', 300, 1, 86_400),
      totpSetup: read.int('TOTP_SETUP_TTL', 600, 1, 86_400),
      passwordReset: read.int('PASSWORD_RESET_TTL', 3600, 1, 86_400 * 30),
      emailVerification: read.int('EMAIL_VERIFICATION_TTL', 86_400, 1, 86_400 * 30),
    },
    registrationEnabled: read.bool('REGISTRATION_ENABLED', true),
    admin: adminEmail && adminPassword ? { email: adminEmail, password: adminPassword } : undefined,
    mail: {
      smtpUrl: read.optionalUrl('SMTP_URL', ['smtp:', 'smtps:']),
      from: mailFrom,
    },
    oidc: {
      google: {
        clientId: googleClientId,
        clientSecret: read.optional('OIDC_GOOGLE_CLIENT_SECRET'),
        issuer: read.providerUrl('OIDC_GOOGLE_ISSUER', 'https://accounts.google.com'),
        audiences: read.list('OIDC_GOOGLE_AUDIENCES', googleClientId ? [googleClientId] : []),
      },
      facebook: {
        clientId: read.optional('OIDC_FACEBOOK_CLIENT_ID'),
        clientSecret: read.optional('OIDC_FACEBOOK_CLIENT_SECRET'),
        authUrl: read.providerUrl('OIDC_FACEBOOK_AUTH_URL', 'https://www.facebook.com/v19.0/dialog/oauth'),
        tokenUrl: read.providerUrl('OIDC_FACEBOOK_TOKEN_URL', 'https://graph.facebook.com/v19.0/oauth/access_token'),
        userinfoUrl: read.providerUrl('OIDC_FACEBOOK_USERINFO_URL', 'https://graph.facebook.com/me?fields=id,name,email'),
      },
      apple: {
        clientId: read.optional('OIDC_APPLE_CLIENT_ID'),
        teamId: read.optional('OIDC_APPLE_TEAM_ID'),
        keyId: read.optional('OIDC_APPLE_KEY_ID'),
        privateKeyPem: read.pem('OIDC_APPLE_PRIVATE_KEY'),
        issuer: read.providerUrl('OIDC_APPLE_ISSUER', 'https://appleid.apple.com'),
      },
    },
    stripe: { webhookSecret: read.optional('STRIPE_WEBHOOK_SECRET') },
    apple: {
      rootCertificates: read.files('APPLE_ROOT_CERTS'),
      bundleId: read.optional('APPLE_BUNDLE_ID'),
      appAppleId: read.optionalInt('APPLE_APP_APPLE_ID'),
      environment: read.oneOf('APPLE_ENVIRONMENT', 'Production', ['Production', 'Sandbox', 'Xcode', 'LocalTesting']),
      onlineChecks: read.bool('APPLE_ONLINE_CHECKS', true),
    },
    google: {
      pubsubAudience: read.optional('GOOGLE_PUBSUB_AUDIENCE'),
      pubsubServiceAccount: read.optional('GOOGLE_PUBSUB_SERVICE_ACCOUNT'),
      packageName: read.optional('GOOGLE_PACKAGE_NAME'),
      certsUrl: read.providerUrl('GOOGLE_CERTS_URL', 'https://www.googleapis.com/oauth2/v1/certs'),
    },
    devicePorts: Object.fromEntries(PROTOCOL_REGISTRY.map(({ name, port }) => [name, read.int(port.variable, port.default, 0, 65535)])) as Record<DeviceProtocol, number>,
    statusTimeout: read.int('STATUS_TIMEOUT', 600, 1, 86_400 * 365),
    commandTtl: read.int('COMMAND_TTL', 86_400, 1, 86_400 * 365),
    commands: {
      queuedPerDevice: read.int('MAX_QUEUED_COMMANDS_PER_DEVICE', 100, 1, 100_000),
      sendsPerMinute: read.int('COMMAND_SEND_RATE', 120, 1, 100_000),
      historyDays: read.int('COMMAND_HISTORY_DAYS', 90, 0, 36_500),
    },
    ingest: {
      batchSize: read.int('INGEST_BATCH_SIZE', 1000, 1, 10_000),
      batchDelay: read.int('INGEST_BATCH_DELAY', 2, 0, 1000),
      connectionsPerIp: read.int('DEVICE_CONNECTIONS_PER_IP', 1000, 1, 1_000_000),
    },
    retention: {
      interval: read.int('RETENTION_INTERVAL', 3600, 0, 7 * 86_400),
      chunkSize: read.int('RETENTION_CHUNK', 5000, 100, 100_000),
    },
    eventDefaults: read.settings('EVENT_DEFAULTS'),
    metrics: { port: read.int('METRICS_PORT', 9464, 0, 65535), host: read.string('METRICS_HOST', '127.0.0.1') },
    deviceRegistration: read.oneOf<DeviceRegistration>('DEVICE_REGISTRATION', 'open', ['open', 'claim-only']),
    limits: {
      devicesPerUser: read.int('MAX_DEVICES_PER_USER', 5000, 1, 1_000_000),
      sharesPerDevice: read.int('MAX_SHARES_PER_DEVICE', 100, 1, 100_000),
      geofencesPerUser: read.int('MAX_GEOFENCES_PER_USER', 1000, 1, 1_000_000),
      geofencePointsPerUser: read.int('MAX_GEOFENCE_POINTS_PER_USER', 100_000, 1, 100_000_000),
    },
    push: read.push(mailFrom),
    plans: { file: read.optional('PLANS_FILE'), graceDays: read.int('PLAN_GRACE_DAYS', 30, 0, 3650) },
    notifications,
    work: {
      maxAttempts: read.int('QUEUE_MAX_ATTEMPTS', DEFAULT_WORK_SETTINGS.maxAttempts, 1, 1000),
      handlerTimeoutMs: read.int('QUEUE_HANDLER_TIMEOUT', DEFAULT_WORK_SETTINGS.handlerTimeoutMs, 100, 3_600_000),
      leaseMs: read.int('QUEUE_LEASE', DEFAULT_WORK_SETTINGS.leaseMs, 100, 600_000),
    },
  };
}

/** The address of a `Name <address>` sender, or the whole value when it is a bare address. */
function mailAddress(from: string): string {
  return /<([^<>\s]+)>/.exec(from)?.[1] ?? from.trim();
}

class EnvReader {
  private readonly env: Env;
  constructor(env: Env) {
    this.env = env;
  }

  optional(name: string): string | undefined {
    const value = this.env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  string(name: string, fallback: string): string {
    return this.optional(name) ?? fallback;
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw)) throw new ConfigError(name, `expected a whole number, got '${raw}'`);
    const value = Number(raw);
    if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
    return value;
  }

  optionalInt(name: string): number | undefined {
    return this.optional(name) === undefined ? undefined : this.int(name, 0, 0, Number.MAX_SAFE_INTEGER);
  }

  bool(name: string, fallback: boolean): boolean {
    const raw = this.optional(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (['true', '1', 'yes', 'on'].includes(raw)) return true;
    if (['false', '0', 'no', 'off'].includes(raw)) return false;
    throw new ConfigError(name, `expected true or false, got '${raw}'`);
  }

  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const match = allowed.find((value) => value.toLowerCase() === raw.toLowerCase());
    if (!match) throw new ConfigError(name, `expected one of ${allowed.join(', ')}, got '${raw}'`);
    return match;
  }

  matching(name: string, fallback: string, pattern: RegExp, expected: string): string {
    const value = this.string(name, fallback);
    if (!pattern.test(value)) throw new ConfigError(name, `expected ${expected}, got '${value}'`);
    return value;
  }

  /** `name=value` pairs separated by commas; a value is a number >= 0, true or false. */
  settings(name: string): Record<string, number | boolean> {
    const settings: Record<string, number | boolean> = {};
    for (const pair of this.list(name, [])) {
      const match = /^([A-Za-z][A-Za-z0-9]*)\s*=\s*(\S+)$/.exec(pair);
      if (!match) throw new ConfigError(name, `expected name=value pairs separated by commas, got '${pair}'`);
      const [, key, raw] = match as unknown as [string, string, string];
      if (raw === 'true' || raw === 'false') settings[key] = raw === 'true';
      else if (/^\d+(\.\d+)?$/.test(raw)) settings[key] = Number(raw);
      else throw new ConfigError(name, `${key}: expected a number >= 0, true or false, got '${raw}'`);
    }
    return settings;
  }

  list(name: string, fallback: string[]): string[] {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    return raw.split(',').map((item) => item.trim()).filter(Boolean);
  }

  optionalUrl(name: string, protocols: string[]): string | undefined {
    const raw = this.optional(name);
    if (raw === undefined) return undefined;
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      throw new ConfigError(name, `not a valid URL: '${raw}'`);
    }
    if (!protocols.includes(parsed.protocol)) {
      throw new ConfigError(name, `expected a ${protocols.join(' or ')} URL, got '${parsed.protocol}'`);
    }
    return raw;
  }

  url(name: string, fallback: string, protocols: string[]): string {
    return this.optionalUrl(name, protocols) ?? fallback;
  }

  /** A provider's URL (social login, store certificates): https, or http only on this machine (a local stand-in in tests or development). */
  providerUrl(name: string, fallback: string): string {
    const value = this.url(name, fallback, ['http:', 'https:']);
    const url = new URL(value);
    if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
      throw new ConfigError(name, `must be an https URL (http only for localhost), got '${value}'`);
    }
    return value;
  }

  secret(name: string, minLength: number): string | undefined {
    const value = this.optional(name);
    if (value !== undefined && value.length < minLength) {
      throw new ConfigError(name, `must be at least ${minLength} characters`);
    }
    return value;
  }

  /** A provider's origin to which the product appends the API's paths: no path, query or fragment. */
  providerOrigin(name: string, fallback: string): string {
    const url = new URL(this.providerUrl(name, fallback));
    if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
      throw new ConfigError(name, `expected an origin such as https://host:port, without a path, got '${url.href}'`);
    }
    return url.origin;
  }

  /** A base64url value (no padding) of exactly `bytes` bytes once decoded. */
  base64url(name: string, bytes: number): string | undefined {
    const value = this.optional(name);
    if (value !== undefined && (!/^[A-Za-z0-9_-]+$/.test(value) || Buffer.from(value, 'base64url').length !== bytes)) {
      throw new ConfigError(name, `expected ${bytes} bytes in base64url (as web-push generate-vapid-keys prints them)`);
    }
    return value;
  }

  /** Text given inline when it starts with `{`, else the path of a file holding it. */
  jsonText(name: string): string | undefined {
    const raw = this.optional(name);
    if (raw === undefined) return undefined;
    return raw.startsWith('{') ? raw : this.readFile(name, raw).toString('utf8');
  }

  push(mailFrom: string): PushConfig {
    const publicKey = this.base64url('VAPID_PUBLIC_KEY', 65);
    const privateKey = this.base64url('VAPID_PRIVATE_KEY', 32);
    if (publicKey && !privateKey) throw new ConfigError('VAPID_PRIVATE_KEY', 'required when VAPID_PUBLIC_KEY is set');
    if (privateKey && !publicKey) throw new ConfigError('VAPID_PUBLIC_KEY', 'required when VAPID_PRIVATE_KEY is set');
    const subject = this.string('VAPID_SUBJECT', `mailto:${mailAddress(mailFrom)}`);
    if (!/^mailto:[^\s@]+@[^\s@]+$/.test(subject) && !/^https:\/\/[^\s]+$/.test(subject)) {
      throw new ConfigError('VAPID_SUBJECT', `expected mailto:address or an https: URL, got '${subject}'`);
    }
    const apns = {
      keyPem: this.pem('APNS_KEY'),
      keyId: this.optional('APNS_KEY_ID'),
      teamId: this.optional('APNS_TEAM_ID'),
      topic: this.optional('APNS_TOPIC'),
      url: this.providerOrigin('APNS_URL', 'https://api.push.apple.com'),
    };
    const apnsRequired = { APNS_KEY: apns.keyPem, APNS_KEY_ID: apns.keyId, APNS_TEAM_ID: apns.teamId, APNS_TOPIC: apns.topic };
    if (Object.values(apnsRequired).some(Boolean)) {
      for (const [variable, value] of Object.entries(apnsRequired)) {
        if (!value) throw new ConfigError(variable, 'required when any of APNS_KEY, APNS_KEY_ID, APNS_TEAM_ID, APNS_TOPIC is set');
      }
    }
    return {
      vapid: { publicKey, privateKey, subject },
      fcm: { serviceAccount: this.jsonText('FCM_SERVICE_ACCOUNT'), url: this.providerOrigin('FCM_URL', 'https://fcm.googleapis.com') },
      apns,
    };
  }

  /** A PEM given inline or as the path of a file holding it. */
  pem(name: string): string | undefined {
    const raw = this.optional(name);
    if (raw === undefined) return undefined;
    const text = raw.includes('-----BEGIN') ? raw.replace(/\\n/g, '\n') : this.readFile(name, raw).toString('utf8');
    if (!text.includes('-----BEGIN')) throw new ConfigError(name, 'not a PEM (no -----BEGIN line)');
    return text;
  }

  files(name: string): Buffer[] {
    return this.list(name, []).map((file) => this.readFile(name, file));
  }

  private readFile(name: string, file: string): Buffer {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new ConfigError(name, `cannot read file '${file}' (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }

  services(): Role[] {
    const raw = this.optional('SERVICES');
    const all: Role[] = [...SERVICE_NAMES, 'gateway'];
    if (raw === undefined || raw === 'all') return all;
    const roles = raw.split(',').map((item) => item.trim().toLowerCase()).filter(Boolean);
    for (const role of roles) {
      if (!all.includes(role as Role)) throw new ConfigError('SERVICES', `unknown service '${role}' (use ${all.join(', ')})`);
    }
    if (roles.length === 0) throw new ConfigError('SERVICES', 'names no service');
    return roles as Role[];
  }

  database(dataDir: string): DatabaseConfig {
    const raw = this.optional('DATABASE_URL') ?? `sqlite:${path.join(dataDir, 'trackstack.db')}`;
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
}
