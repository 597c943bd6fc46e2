import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import type { HttpApp } from '../platform/http/app.ts';
import { AppError } from '../platform/http/errors.ts';

/** Where `npm run build:web` (run by `npm start` when stale) writes the web app. */
export const WEB_BUILD_DIR = fileURLToPath(new URL('../../web/dist/', import.meta.url));

/** Paths that belong to the API: an unknown one there is a JSON 404, never the web app. */
const API_PREFIXES = ['/api/', '/webhooks/', '/docs/'];
const API_ROOTS = new Set(['/api', '/webhooks', '/docs', '/openapi.json', '/health']);

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webmanifest': 'application/manifest+json',
  '.txt': 'text/plain; charset=utf-8',
};

/** Hashed file names never change content: a year, immutable. Everything else is revalidated; index.html is never stored. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * The page's own policy: scripts only from here, the map's workers from blob:, tiles and styles from
 * any https host (MAP_STYLE_URL picks them). No referrer leaves the page: the social-login landing
 * carries a token in its URL until the app removes it.
 */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; worker-src 'self' blob:; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob: https:; connect-src 'self' https: wss:; font-src 'self' https:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'permissions-policy': 'camera=(self), geolocation=(self), microphone=()',
};

interface StaticFile {
  body: Buffer;
  gzipped: Buffer | undefined;
  type: string;
  cacheControl: string;
}

/** What the page needs to know of this server before it calls the API, embedded in index.html. */
export interface WebAppSettings {
  mapStyleUrl: string;
  socialProviders: string[];
  registrationEnabled: boolean;
}

export function webAppSettings(config: Pick<Config, 'mapStyleUrl' | 'oidc' | 'registrationEnabled'>): WebAppSettings {
  const { google, facebook, apple } = config.oidc;
  const socialProviders = [
    ...(google.clientId && google.clientSecret ? ['google'] : []),
    ...(facebook.clientId ? ['facebook'] : []),
    ...(apple.clientId ? ['apple'] : []),
  ];
  return { mapStyleUrl: config.mapStyleUrl, socialProviders, registrationEnabled: config.registrationEnabled };
}

/**
 * Serves the built web app at `/`: hashed assets for a year, index.html never stored, and any other
 * GET outside the API's prefixes answered with index.html so the app's own routes (/verify-email,
 * /login/2fa, /devices/7) load it. Files are read once at start. Without a build the API still runs,
 * and `/` says how to build.
 */
export function installWebApp(app: HttpApp, config: Pick<Config, 'mapStyleUrl' | 'oidc' | 'registrationEnabled'>, dir = WEB_BUILD_DIR): void {
  const files = existsSync(path.join(dir, 'index.html')) ? loadFiles(dir, webAppSettings(config)) : undefined;
  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    const pathname = decodePath(request.url.split('?')[0] ?? '/');
    if (API_ROOTS.has(pathname) || API_PREFIXES.some((prefix) => pathname.startsWith(prefix))) {
      throw new AppError('NOT_FOUND', `Route ${request.method} ${pathname} not found`);
    }
    if (!files) {
      return reply.code(503).type('text/plain; charset=utf-8').header('cache-control', 'no-store').send('The web app is not built: run `npm run build:web` (npm start does it).\n');
    }
    const file = files.get(pathname) ?? (pathname.startsWith('/assets/') || path.extname(pathname) !== '' ? undefined : files.get('/index.html'));
    if (!file) throw new AppError('NOT_FOUND', `No file ${pathname}`);
    reply.headers(PAGE_HEADERS).header('cache-control', file.cacheControl).header('vary', 'accept-encoding').type(file.type);
    if (file.gzipped && /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) {
      return reply.header('content-encoding', 'gzip').send(file.gzipped);
    }
    return reply.send(file.body);
  };
  const options = { schema: { hide: true }, config: { access: 'public' as const, anonymous: true } };
  app.get('/', options, serve);
  app.get('/*', options, serve);
}

function loadFiles(dir: string, settings: WebAppSettings): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  for (const relative of listFiles(dir)) {
    const urlPath = `/${relative.split(path.sep).join('/')}`;
    let body = readFileSync(path.join(dir, relative));
    if (urlPath === '/index.html') body = Buffer.from(embedSettings(body.toString('utf8'), settings));
    const type = CONTENT_TYPES[path.extname(relative)] ?? 'application/octet-stream';
    const cacheControl = urlPath === '/index.html' ? 'no-store' : urlPath.startsWith('/assets/') ? IMMUTABLE : 'no-cache';
    const compressible = /^(text\/|application\/(json|manifest)|image\/svg)/.test(type) && body.length > 1024;
    files.set(urlPath, { body, gzipped: compressible ? gzipSync(body, { level: 9 }) : undefined, type, cacheControl });
  }
  return files;
}

function listFiles(dir: string, prefix = ''): string[] {
  return readdirSync(path.join(dir, prefix)).flatMap((name) => {
    const relative = path.join(prefix, name);
    return statSync(path.join(dir, relative)).isDirectory() ? listFiles(dir, relative) : [relative];
  });
}

/** The settings as JSON data in the page (not a script the browser runs), with `<` escaped so no value can close the tag. */
function embedSettings(html: string, settings: WebAppSettings): string {
  const json = JSON.stringify(settings).replace(/</g, '\\u003c');
  const tag = `<script id="trackstack-settings" type="application/json">${json}</script>`;
  if (!html.includes('<!--trackstack-settings-->')) throw new Error('web/dist/index.html has no <!--trackstack-settings--> placeholder');
  return html.replace('<!--trackstack-settings-->', tag);
}

function decodePath(pathname: string): string {
  try {
    return decodeURIComponent(pathname);
  } catch {
    return pathname;
  }
}
