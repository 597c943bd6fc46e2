import { existsSync } from 'node:fs';
import { ConfigError, SERVICE_NAMES, loadConfig } from '../config.ts';
import { openDatabase } from '../platform/db/database.ts';
import { migrateModules } from '../platform/db/migrations.ts';
import { MODULE_MIGRATIONS } from '../modules.ts';
import { runUserCommand, USER_USAGE } from '../services/auth/cli.ts';
import { CLAIM_TOKENS_USAGE, runClaimTokensCommand } from '../services/devices/claim-tokens/cli.ts';
import { localDeviceAttributes } from '../services/devices/module.ts';
import { REPORTS_USAGE, runReportsCommand } from '../services/tracking/reports/segmentation/cli.ts';

const USAGE = `Usage: npm run cli -- <command>

Commands:
  migrate    apply every module's pending migrations to DATABASE_URL
${USER_USAGE}
${CLAIM_TOKENS_USAGE}
${REPORTS_USAGE}`;

if (existsSync('.env')) process.loadEnvFile('.env');

const [command, ...args] = process.argv.slice(2);
try {
  const config = loadConfig();
  switch (command) {
    case 'migrate': {
      const database = openDatabase(config.database);
      try {
        const applied = await migrateModules(database, SERVICE_NAMES.map((name) => MODULE_MIGRATIONS[name]));
        console.log(applied.length > 0 ? `Applied: ${applied.join(', ')}` : 'Already up to date.');
      } finally {
        await database.close();
      }
      break;
    }
    case 'user': {
      const result = await runUserCommand(config, args);
      (result.exitCode === 0 ? console.log : console.error)(result.output);
      process.exitCode = result.exitCode;
      break;
    }
    case 'claim-tokens':
      process.exitCode = await runClaimTokensCommand(args, config);
      break;
    case 'reports':
      process.exitCode = await runReportsCommand(args, config, localDeviceAttributes);
      break;
    default:
      console.error(USAGE);
      process.exitCode = command === undefined || command === 'help' ? 0 : 1;
  }
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`Configuration error: ${error.message}`);
  process.exitCode = 1;
}
