import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import pino from 'pino';
import type { Config } from '../../config.ts';
import { EventBus } from '../../platform/bus.ts';
import { randomToken } from '../../platform/crypto.ts';
import { openDatabase } from '../../platform/db/database.ts';
import { migrateModules } from '../../platform/db/migrations.ts';
import { Outbox } from '../../platform/outbox/outbox.ts';
import { authMigrations } from './migrations/index.ts';
import { SessionRepository } from './sessions/repository.ts';
import { SessionService } from './sessions/service.ts';
import type { AuthTables } from './tables.ts';
import { passwordProblem } from './users/password-policy.ts';
import { UserRepository } from './users/repository.ts';
import { AccountService } from './users/service.ts';

export const USER_USAGE = `  user create --email <address> [--password <password>] [--name <name>] [--admin]
             create a verified account (a password is generated and printed when none is given)`;

export interface CommandResult {
  exitCode: number;
  output: string;
}

/** `npm run cli -- user create …`: works on the database directly, with or without a running server. */
export async function runUserCommand(config: Config, args: string[]): Promise<CommandResult> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: { email: { type: 'string' }, password: { type: 'string' }, name: { type: 'string' }, admin: { type: 'boolean', default: false } },
    });
  } catch (error) {
    return { exitCode: 1, output: `${(error as Error).message}\n\nUsage:\n${USER_USAGE}` };
  }
  const [action] = parsed.positionals;
  const { email, name, admin } = parsed.values;
  if (action !== 'create' || !email) return { exitCode: 1, output: `Usage:\n${USER_USAGE}` };
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254) return { exitCode: 1, output: `Not an e-mail address: ${email}` };
  const password = parsed.values.password ?? generatedPassword();
  const problem = passwordProblem(password);
  if (problem) return { exitCode: 1, output: problem };

  const database = openDatabase(config.database);
  try {
    await migrateModules(database, [authMigrations]);
    const db = database.db as Kysely<AuthTables>;
    const users = new UserRepository(db);
    if (await users.findByEmail(email)) return { exitCode: 1, output: `An account with the address ${email.toLowerCase()} already exists.` };
    const log = pino({ level: 'silent' });
    const bus = new EventBus(log);
    // Creating an account records no fact, so this outbox names no consumers.
    const outbox = new Outbox({ database, consumers: {}, bus, log });
    const accounts = new AccountService(users, new SessionService(new SessionRepository(db), bus, config.ttl), bus, outbox);
    const user = await accounts.create({ email, password, name: name ?? null, administrator: admin, emailVerified: true });
    const lines = [`Created ${admin ? 'administrator' : 'user'} ${user.email} (id ${user.id}).`];
    if (parsed.values.password === undefined) lines.push(`Password: ${password}`, 'It is shown only now; change it after the first sign-in.');
    return { exitCode: 0, output: lines.join('\n') };
  } finally {
    await database.close();
  }
}

function generatedPassword(): string {
  for (;;) {
    const candidate = randomToken(15);
    if (passwordProblem(candidate) === undefined) return candidate;
  }
}
