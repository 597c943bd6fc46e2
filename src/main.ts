import { existsSync } from 'node:fs';
import { ConfigError, loadConfig } from './config.ts';
import type { Config } from './config.ts';
import { createServer } from './server.ts';

if (existsSync('.env')) process.loadEnvFile('.env');

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`Configuration error: ${error.message}`);
  process.exit(1);
}

const server = await createServer(config).catch((error: unknown) => {
  if (error instanceof ConfigError) {
    console.error(`Configuration error: ${error.message}`);
    process.exit(1);
  }
  throw error;
});
await server.app.listen({ port: config.port, host: config.host });
printWelcome(config, server.app.server.address(), server.metricsUrl);

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    server.app.log.info({ signal }, 'shutting down');
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        server.app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}

function printWelcome(config: Config, address: ReturnType<typeof server.app.server.address>, metricsUrl: string | undefined): void {
  const port = typeof address === 'object' && address ? address.port : config.port;
  const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
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
