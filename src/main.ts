import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { ConfigError, loadConfig } from './config.ts';
import type { Config } from './config.ts';
import { checkMapStyle } from './gateway/map-style-check.ts';
import { listenWhileStarting } from './platform/http/starting.ts';
import { listenAsConfigured } from './platform/listen-errors.ts';

if (existsSync('.env')) process.loadEnvFile('.env');

/** Bad configuration (a bad value, a port already taken) ends the process with one line naming the variable. */
function stopOnConfigError(error: unknown): never {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`Configuration error: ${error.message}`);
  process.exit(1);
}

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  stopOnConfigError(error);
}

const portSettings = { portVariable: 'PORT', port: config.port, hostVariable: 'HOST', host: config.host };
// A process with modules migrates before it serves; meanwhile its health says not ready (a gateway-only one has nothing to wait for).
const starting = config.services.length > 0 ? await listenAsConfigured(portSettings, () => listenWhileStarting(config)).catch(stopOnConfigError) : undefined;
// Loaded only now: loading every module takes a while, and the port answers meanwhile.
const { createServer } = await import('./server.ts');
const server = await createServer(config).catch(stopOnConfigError);
await starting?.close();
const port = starting?.port ?? config.port;
await listenAsConfigured({ ...portSettings, port }, () => server.app.listen({ port, host: config.host })).catch(stopOnConfigError);
printWelcome(config, server.app.server.address(), server.metricsUrl);
if (config.gateway) printMapStyleCheck(config, server.app.server.address());

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    // Health says not ready at once; DRAIN_DELAY gives a load balancer time to see it before the listeners close.
    server.app.readiness.phase = 'draining';
    server.app.log.info({ signal, drainDelay: config.drainDelay }, 'draining, then shutting down');
    delay(config.drainDelay * 1000).then(() => server.close()).then(
      () => process.exit(0),
      (error: unknown) => {
        server.app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}

function baseUrl(config: Config, address: string | AddressInfo | null): string {
  const port = typeof address === 'object' && address ? address.port : config.port;
  return `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
}

/** A line after the banner, once known (start does not wait for it): whether the web app's map style and its tiles can be read. */
function printMapStyleCheck(config: Config, address: string | AddressInfo | null): void {
  const local = baseUrl({ ...config, host: ['0.0.0.0', '::'].includes(config.host) ? '127.0.0.1' : config.host }, address);
  void checkMapStyle(config.mapStyleUrl, local).then(({ detail }) => console.log(`  Map style    ${config.mapStyleUrl}: ${detail} (MAP_STYLE_URL)`));
}

function printWelcome(config: Config, address: string | AddressInfo | null, metricsUrl: string | undefined): void {
  const base = baseUrl(config, address);
  const lines = [
    `Trackstack is running (${[...config.services, ...(config.gateway ? ['gateway'] : [])].join(', ')})`,
    ...(config.gateway ? [`  Web app      ${base}/`] : []),
    `  API          ${base}/api`,
    `  API docs     ${base}/docs  (OpenAPI: ${base}/openapi.json)`,
  ];
  if (config.services.includes('tracking')) {
    const ports = Object.entries(config.devicePorts).filter(([, value]) => value > 0);
    lines.push(`  Devices      ${ports.map(([name, value]) => `${name} ${value}`).join(', ')}`);
  }
  if (metricsUrl) lines.push(`  Metrics      ${metricsUrl}`);
  if (config.services.length > 0) {
    lines.push(
      `  Database     ${config.database.engine === 'sqlite' ? config.database.file : 'PostgreSQL'}`,
      `  Data dir     ${config.dataDir}`,
    );
  }
  if (config.services.includes('auth') && !config.admin) {
    lines.push('  First admin  npm run cli -- user create --admin --email you@example.com  (or set ADMIN_EMAIL/ADMIN_PASSWORD)');
  }
  console.log(lines.join('\n'));
}
