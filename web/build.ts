/**
 * Builds the web app into web/dist with Vite. `npm start` runs it first (prestart) with --if-stale:
 * it builds only when web/, src/client/ or the lockfile changed since the last build, so
 * `npm ci && npm start` serves the app with no further step and restarts stay quick.
 */
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import react from '@vitejs/plugin-react';
import { build } from 'vite';

const webDir = path.dirname(fileURLToPath(import.meta.url));
const rootDir = path.dirname(webDir);
const outDir = path.join(webDir, 'dist');
const SOURCES = [path.join(webDir, 'src'), path.join(webDir, 'public'), path.join(webDir, 'index.html'), path.join(webDir, 'build.ts'), path.join(rootDir, 'src/client'), path.join(rootDir, 'package-lock.json')];

function newestChange(entry: string): number {
  if (!existsSync(entry)) return 0;
  const stat = statSync(entry);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(entry).map((name) => newestChange(path.join(entry, name))));
}

export function isStale(): boolean {
  const built = path.join(outDir, 'index.html');
  if (!existsSync(built)) return true;
  return Math.max(...SOURCES.map(newestChange)) > statSync(built).mtimeMs;
}

export async function buildWebApp(): Promise<void> {
  await build({
    root: webDir,
    configFile: false,
    logLevel: 'warn',
    plugins: [react()],
    publicDir: path.join(webDir, 'public'),
    server: { fs: { allow: [rootDir] } },
    build: { outDir, emptyOutDir: true, target: 'es2022', sourcemap: false, chunkSizeWarningLimit: 1500, reportCompressedSize: false },
  });
  // Every built asset (each screen's chunk too), for the service worker's offline shell (web/public/sw.js).
  const assets = readdirSync(path.join(outDir, 'assets')).map((name) => `/assets/${name}`);
  writeFileSync(path.join(outDir, 'shell-assets.json'), JSON.stringify(assets));
}

/** What the browser fetches before the first screen: the entry module, its preloads and stylesheets, gzip-compressed as served. */
export function initialBundle(): { files: string[]; gzipBytes: number; mapChunkGzipBytes: number } {
  const html = readFileSync(path.join(outDir, 'index.html'), 'utf8');
  const files = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+\.(?:js|css))"/g)].map((match) => match[1] as string);
  const gzipSize = (file: string) => gzipSync(readFileSync(path.join(outDir, file))).length;
  const mapChunk = readdirSync(path.join(outDir, 'assets')).find((name) => /^maplibre-.*\.js$/.test(name));
  return {
    files,
    gzipBytes: files.reduce((sum, file) => sum + gzipSize(file), 0),
    mapChunkGzipBytes: mapChunk ? gzipSize(`/assets/${mapChunk}`) : 0,
  };
}

const LOCK = path.join(webDir, '.build-lock');
/** A build takes seconds; a lock older than this was left by a process that died. */
const STALE_LOCK_MS = 120_000;

/**
 * Builds unless the build is current, one process at a time: test files run side by side and each
 * needs the app, and two builds emptying one folder would break each other.
 */
export async function buildIfStale(): Promise<boolean> {
  for (;;) {
    try {
      closeSync(openSync(LOCK, 'wx'));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (existsSync(LOCK) && Date.now() - statSync(LOCK).mtimeMs > STALE_LOCK_MS) rmSync(LOCK, { force: true });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    if (!isStale()) return false;
    await buildWebApp();
    return true;
  } finally {
    rmSync(LOCK, { force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  const built = process.argv.includes('--if-stale') ? await buildIfStale() : (await buildWebApp(), true);
  if (built) console.log(`web app built into ${path.relative(process.cwd(), outDir) || outDir} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
