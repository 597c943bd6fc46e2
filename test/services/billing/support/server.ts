import { loadConfig } from '../../../../src/config.ts';
import { createServer } from '../../../../src/server.ts';
import type { Server } from '../../../../src/server.ts';
import type { TestEngine } from '../../../support/engines.ts';
import { NO_METRICS, TEST_INTERNAL_TOKEN, startTestServer } from '../../../support/server.ts';
import type { TestServer } from '../../../support/server.ts';
import { startBillingTestProviders } from './providers.ts';
import type { BillingTestProviders } from './providers.ts';

export interface BillingTestSetup {
  providers: BillingTestProviders;
  server: TestServer;
}

/** The local providers and an all-in-one server that trusts them (`env` adds to its configuration). */
export async function startBillingTestServer(engine: TestEngine, env: Record<string, string> = {}): Promise<BillingTestSetup> {
  const providers = await startBillingTestProviders();
  try {
    return { providers, server: await startTestServer(engine, { ...providers.env, ...env }) };
  } catch (error) {
    await providers.close();
    throw error;
  }
}

/** Stops what `startBillingTestServer` started, including a half-finished start. */
export async function stopBillingTestServer(setup: Partial<BillingTestSetup>): Promise<void> {
  await setup.server?.dispose();
  await setup.providers?.close();
}

/** A billing-only process without the gateway, on the suite's database, as a split deployment runs it. */
export function createBillingOnlyServer({ providers, server }: BillingTestSetup): Promise<Server> {
  return createServer(
    loadConfig({ SERVICES: 'billing', DATA_DIR: server.dataDir, LOG_LEVEL: 'silent', INTERNAL_TOKEN: TEST_INTERNAL_TOKEN, ...NO_METRICS, ...providers.env }),
    { database: server.database },
  );
}
