import type { Config } from '../../config.ts';
import { createHttpApp } from './app.ts';
import { AppError } from './errors.ts';
import { HEALTH_ROUTES } from './health.ts';

/** What answers on PORT while the process starts. */
export interface StartingListener {
  port: number;
  close(): Promise<void>;
}

/**
 * Answers on PORT while the process migrates its database and starts its modules, so a load balancer
 * sees `ready: false` rather than a refused connection: each health route of the modules it runs
 * answers ready false (the database answers, or the process would have stopped), anything else
 * 503 STARTING. Closed just before the app takes the port.
 */
export async function listenWhileStarting(config: Config): Promise<StartingListener> {
  const app = createHttpApp({ logLevel: config.logLevel, bodyLimit: 1024, trustProxy: undefined });
  for (const name of config.services) {
    if (!(name in HEALTH_ROUTES)) continue;
    const { url, service } = HEALTH_ROUTES[name as keyof typeof HEALTH_ROUTES];
    app.get(url, async () => ({ status: 'healthy', service, ready: false, database: 'connected' }));
  }
  app.all('/*', async (_request, reply) => {
    reply.header('retry-after', '1');
    throw new AppError('STARTING');
  });
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  return {
    port: typeof address === 'object' && address ? address.port : config.port,
    async close() {
      app.server.closeAllConnections();
      await app.close();
    },
  };
}
