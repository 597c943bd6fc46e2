import { existsSync } from 'node:fs';
import { ConfigError, SERVICE_NAMES, loadConfig } from '../config.ts';
import { openDatabase } from '../platform/db/database.ts';
import { migrateModules } from '../platform/db/migrations.ts';
import { MODULE_MIGRATIONS } from '../server.ts';

const USAGE = `Usage: npm run cli -- <command>

Commands:
  migrate    apply every module's pending migrations to DATABASE_URL`;

if (existsSync('.env')) process.loadEnvFile('.env');

const [command] = process.argv.slice(2);
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
    default:
      console.error(USAGE);
      process.exitCode = command === undefined || command === 'help' ? 0 : 1;
  }
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`Configuration error: ${error.message}`);
  process.exitCode = 1;
}
