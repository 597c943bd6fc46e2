import cors from '@fastify/cors';
import type { Config } from '../config.ts';
import { grantAccess } from '../platform/http/access.ts';
import type { HttpApp } from '../platform/http/app.ts';
import { REQUEST_ID_HEADER } from '../platform/http/app.ts';

/**
 * A web app served from its own origin (WEB_URL other than PUBLIC_URL, e.g. app.example.com beside
 * api.example.com) may call the API from the browser, cookies included. Only that exact origin:
 * any other page's request gets no CORS headers, so the browser keeps its answer from it. Preflights
 * are answered before authentication, which they never carry. Nothing is added when both URLs share
 * an origin.
 */
export async function allowWebAppOrigin(app: HttpApp, config: Pick<Config, 'publicUrl' | 'webUrl'>): Promise<void> {
  const webOrigin = new URL(config.webUrl).origin;
  if (webOrigin === new URL(config.publicUrl).origin) return;
  // The plugin answers preflights in its hook; its catch-all OPTIONS route only lets them be routed.
  app.addHook('onRoute', (route) => {
    if (route.method === 'OPTIONS' && route.url === '*') grantAccess(route, 'public');
  });
  await app.register(cors, {
    origin: [webOrigin],
    credentials: true,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['authorization', 'content-type', REQUEST_ID_HEADER],
    exposedHeaders: [REQUEST_ID_HEADER, 'retry-after', 'content-disposition'],
    maxAge: 600,
    // An OPTIONS request without Origin is answered like a preflight rather than with a plain-text 400.
    strictPreflight: false,
  });
}
