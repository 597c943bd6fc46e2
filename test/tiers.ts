/**
 * The suite's tiers (docs/testing.md). `npm test` runs every test file; `npm run test:unit` runs the
 * unit tier: the files that start no server, open no socket, run no child process and need no
 * PostgreSQL. The unit tier is derived from the imports, not listed, so that it stays right as files
 * are added: a test file is a unit file unless its own imports, followed through the test helpers
 * under test/, reach a server-tier module below. What the code under test (src/, web/) does is not
 * read here; the guard that `test:unit` loads first (test/support/unit-guard.ts) fails a unit file
 * that opens a listener, a connection or a process through it.
 *
 *   node test/tiers.ts unit|server [node --test options]   runs a tier
 *   node test/tiers.ts list unit|server                    prints a tier's files
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const testDir = path.join(root, 'test');

/** Node modules that only a server-tier file imports: sockets, listeners, child processes. */
const SERVER_BUILTINS = new Set(['child_process', 'cluster', 'dgram', 'http', 'http2', 'https', 'net', 'tls'].flatMap((name) => [name, `node:${name}`]));

/** Test helpers that start the server or open the test databases (PostgreSQL and Redis with TEST_DATABASE_URL). */
const SERVER_HELPERS = new Set(['test/support/server.ts', 'test/support/engines.ts'].map((file) => path.join(root, file)));

/**
 * Files whose imports look like a unit file's but that belong to the server tier, and why: a build
 * that takes longer than the unit tier's seconds, or a listener or process opened through src/
 * (which the unit guard refuses).
 */
const SERVER_TIER_FILES: Record<string, string> = {
  'test/web/bundle.test.ts': 'builds the web app when its sources changed',
};

/** Static and dynamic imports, except `import type`, which Node erases. */
const IMPORT = /(?:^|[\s;])(?:import|export)\s+(?!type[\s{])(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

export type Tier = 'unit' | 'server';

/** What a module's source imports and runs (`import type` is erased, so it does not count). */
export function importSpecifiers(source: string): string[] {
  return [...source.matchAll(IMPORT)].map((match) => (match[1] ?? match[2]) as string);
}

/** Why `file` belongs to the server tier (the chain of imports that reaches a server-tier module), or null. */
export function serverReason(file: string, seen = new Set<string>()): string | null {
  if (SERVER_HELPERS.has(file)) return path.relative(root, file);
  if (seen.has(file)) return null;
  seen.add(file);
  for (const specifier of importSpecifiers(readFileSync(file, 'utf8'))) {
    if (SERVER_BUILTINS.has(specifier)) return `${path.relative(root, file)} → ${specifier}`;
    if (!specifier.startsWith('.')) continue;
    const target = path.resolve(path.dirname(file), specifier);
    if (!target.startsWith(testDir + path.sep) || !existsSync(target)) continue;
    const reason = serverReason(target, seen);
    if (reason) return `${path.relative(root, file)} → ${reason}`;
  }
  return null;
}

/** Every file `npm test` runs ("test/**\/*.test.ts"), relative to the repository, sorted. */
export function testFiles(): string[] {
  return readdirSync(testDir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => path.posix.join('test', file.split(path.sep).join('/')))
    .sort();
}

export function tierOf(file: string): Tier {
  if (file in SERVER_TIER_FILES) return 'server';
  return serverReason(path.join(root, file)) === null ? 'unit' : 'server';
}

export function filesOf(tier: Tier): string[] {
  return testFiles().filter((file) => tierOf(file) === tier);
}

function run(tier: Tier, nodeTestOptions: string[]): number {
  const files = filesOf(tier);
  const guard = tier === 'unit' ? ['--import', './test/support/unit-guard.ts'] : [];
  // The unit files share one process: loading src/ once per file would cost more than the tests.
  const isolation = tier === 'unit' ? ['--test-isolation=none'] : ['--test-concurrency=4'];
  const result = spawnSync(process.execPath, [...guard, '--test', ...isolation, '--test-timeout=120000', ...nodeTestOptions, ...files], { cwd: root, stdio: 'inherit' });
  return result.status ?? 1;
}

if (import.meta.main) {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'list' && (rest[0] === 'unit' || rest[0] === 'server')) {
    for (const file of filesOf(rest[0])) console.log(file);
  } else if (command === 'unit' || command === 'server') {
    process.exitCode = run(command, rest);
  } else {
    console.error('usage: node test/tiers.ts unit|server [node --test options] | list unit|server');
    process.exitCode = 2;
  }
}
