import type { RouteOptions } from 'fastify';
import type { HttpApp } from './app.ts';
import { AppError } from './errors.ts';
import { ACCESS_TOKEN_COOKIE } from './identity.ts';
import { errorResponses } from './schemas.ts';

/**
 * Who may call a route: anyone, a signed-in user, an administrator, or only another service
 * (X-Internal-Token, never through the gateway). A service call passes user and administrator
 * routes too: holding the internal token, a service may act as any user anyway.
 */
export type Access = 'public' | 'user' | 'admin' | 'service';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * A module's routes, each as `METHOD /url` exactly as the module registers it, and who may call
 * it: the one declaration of a route's access. A table is plain data, so a gateway-only process
 * knows the routes of modules it does not run. A GET route's HEAD follows it.
 */
export type RouteAccessTable = Readonly<Record<`${Method} /${string}`, Access>>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set from the module's RouteAccessTable; only routes in no table (the API docs) declare it themselves. */
    access?: Access;
    /** A public route that never reads the caller (the web app's files): the gateway does not even verify a token presented to it. */
    anonymous?: boolean;
  }
}

/** The OpenAPI security schemes the access levels are documented with. */
export const SECURITY_SCHEMES = {
  bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
  cookie: { type: 'apiKey', in: 'cookie', name: ACCESS_TOKEN_COOKIE },
  internalToken: { type: 'apiKey', in: 'header', name: 'X-Internal-Token' },
} as const;

const SECURITY: Record<Access, Record<string, string[]>[]> = {
  public: [],
  user: [{ bearer: [] }, { cookie: [] }],
  admin: [{ bearer: [] }, { cookie: [] }],
  service: [{ internalToken: [] }],
};

/**
 * What the access checks answer before the route runs, documented on every route they guard: 401
 * without a valid credential (enforceRouteAccess, and the gateway for a bad or expired token), 403
 * for a user on an administrator route. A public route that answers 401 itself documents it itself.
 */
const ACCESS_RESPONSES: Record<Access, number[]> = { public: [], user: [401], admin: [401, 403], service: [403] };

/** Gives a route its access, the OpenAPI security that documents it and the refusals of its access check. */
export function grantAccess(route: RouteOptions, access: Access): void {
  route.config = { ...route.config, access };
  route.schema = { ...route.schema, security: SECURITY[access] };
  const refusals = ACCESS_RESPONSES[access];
  if (refusals.length > 0) route.schema.response = { ...errorResponses(...refusals), ...(route.schema.response as Record<string, unknown> | undefined) };
}

/**
 * Every route registered from here on takes its access from `tables` (or declares it in its
 * config when no table names it), and its OpenAPI security from that access. At ready, a route
 * without access, or a table entry no route answers, stops the process: the tables cannot drift
 * from the routes.
 */
export function installRouteAccess(app: HttpApp, tables: readonly RouteAccessTable[]): void {
  const declared = new Map<string, Access>();
  for (const table of tables) {
    for (const [key, access] of Object.entries(table) as [string, Access][]) {
      if (declared.has(key)) throw new Error(`${key} is declared by two route tables`);
      declared.set(key, access);
    }
  }
  const routes: RouteOptions[] = [];
  const registered = new Set<string>();

  app.addHook('onRoute', (route) => {
    routes.push(route);
    const keys = [route.method].flat().map((method) => `${method === 'HEAD' ? 'GET' : method} ${route.url}`);
    for (const key of keys) registered.add(key);
    const fromTable = new Set(keys.map((key) => declared.get(key)));
    if (fromTable.size > 1) throw new Error(`${keys.join(', ')}: one route, several accesses; register each method on its own`);
    const [tableAccess] = fromTable;
    if (route.schema?.security) throw new Error(`${keys.join(', ')}: OpenAPI security follows from the route's access and is not set by hand`);
    if (tableAccess && route.config?.access) throw new Error(`${keys.join(', ')}: access is declared in its route table and in its config`);
    const access = tableAccess ?? route.config?.access;
    if (access) grantAccess(route, access);
  });

  app.addHook('onReady', async () => {
    const undeclared = routes.filter((route) => !route.config?.access).map((route) => `${[route.method].flat().join(',')} ${route.url}`);
    if (undeclared.length > 0) throw new Error(`routes without a declared access (add them to their module's route table): ${undeclared.join('; ')}`);
    const unanswered = [...declared.keys()].filter((key) => !registered.has(key));
    if (unanswered.length > 0) throw new Error(`route table entries no route answers: ${unanswered.join('; ')}`);
  });
}

/**
 * Enforces each route's access where the route is served, once the identity is known (after the
 * gateway and the identity reader): 401 without a user, 403 for a user who is not an
 * administrator on an administrator route, 403 on a service route without the internal token.
 */
export function enforceRouteAccess(app: HttpApp, isAdministrator: (userId: number) => Promise<boolean>): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const access = request.routeOptions.config.access;
    // No access: no route matched, and the 404 handler answers.
    if (access === undefined || access === 'public' || request.fromService) return done();
    if (access === 'service') return done(new AppError('FORBIDDEN', 'Only services may call this route'));
    const identity = request.identity;
    if (!identity) return done(new AppError('UNAUTHORIZED'));
    if (access === 'user') return done();
    isAdministrator(identity.userId).then(
      (administrator) => done(administrator ? undefined : new AppError('FORBIDDEN', 'Administrators only')),
      done,
    );
  });
}
