import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import pino from 'pino';
import type { Config } from '../../../config.ts';
import { EventBus } from '../../../platform/bus.ts';
import { openDatabase } from '../../../platform/db/database.ts';
import { migrateModules } from '../../../platform/db/migrations.ts';
import { devicesMigrations } from '../migrations/index.ts';
import { DevicesStore } from '../store.ts';
import type { DevicesTables } from '../tables.ts';
import { exportClaimTokens, formatImportedTokens, importClaimTokens, ImportError } from './bulk.ts';
import { CsvError } from './csv.ts';
import type { ClaimTokenStatus } from './repository.ts';
import { ClaimTokenService } from './service.ts';

export const CLAIM_TOKENS_USAGE = `  claim-tokens import <file.csv> [--transfer]
             create one token per row (uniqueId,modelCode,modelName) and print them as CSV;
             --transfer allows uniqueIds already registered to a device (their claim takes it over)
  claim-tokens export <dir> [--status unclaimed|claimed|revoked]
             write <dir>/claim-tokens.csv and one <token>.png QR code per token`;

const STATUSES: readonly ClaimTokenStatus[] = ['unclaimed', 'claimed', 'revoked'];

export interface CliOutput {
  out(text: string): void;
  error(text: string): void;
}

const consoleOutput: CliOutput = {
  out: (text) => process.stdout.write(text),
  error: (text) => process.stderr.write(text),
};

/** `npm run cli -- claim-tokens …` against DATABASE_URL (pending devices migrations are applied first). Returns the exit code. */
export async function runClaimTokensCommand(args: string[], config: Config, output: CliOutput = consoleOutput): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { status: { type: 'string' }, transfer: { type: 'boolean' } } });
  } catch (error) {
    output.error(`${(error as Error).message}\nUsage:\n${CLAIM_TOKENS_USAGE}\n`);
    return 1;
  }
  const [action, target, ...extra] = parsed.positionals;
  const { status, transfer } = parsed.values;
  const valid =
    target !== undefined &&
    extra.length === 0 &&
    ((action === 'import' && status === undefined) ||
      (action === 'export' && transfer === undefined && (status === undefined || STATUSES.includes(status as ClaimTokenStatus))));
  if (!valid) {
    output.error(`Usage:\n${CLAIM_TOKENS_USAGE}\n`);
    return 1;
  }

  const database = openDatabase(config.database);
  try {
    await migrateModules(database, [devicesMigrations]);
    // Importing and exporting change nothing a user sees of a device, so no running server needs to hear of them.
    const service = new ClaimTokenService(new DevicesStore(database.db as Kysely<DevicesTables>), new EventBus(pino({ level: 'silent' })));
    if (action === 'import') {
      const tokens = await importClaimTokens(service, await readFile(target, 'utf8'), { transfer });
      output.out(formatImportedTokens(tokens));
      output.error(`Imported ${tokens.length} claim token(s).\n`);
    } else {
      const count = await exportClaimTokens(service, target, status as ClaimTokenStatus | undefined);
      output.error(`Exported ${count} claim token(s) to ${target}.\n`);
    }
    return 0;
  } catch (error) {
    if (error instanceof ImportError || error instanceof CsvError) {
      output.error(`Import failed: ${error.message}\n`);
      return 1;
    }
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      output.error(`${(error as Error).message}\n`);
      return 1;
    }
    throw error;
  } finally {
    await database.close();
  }
}
