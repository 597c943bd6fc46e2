import type { Config, ServiceName } from '../config.ts';
import { defineFront } from '../platform/module.ts';
import type { FrontContext, FrontModule, Needs } from '../platform/module.ts';
import { installAuthentication } from './authenticate.ts';
import { allowWebAppOrigin } from './cross-origin.ts';
import { installProxy } from './proxy.ts';
import type { Upstream } from './proxy.ts';
import { connectRemoteVerifier } from './remote-verifier.ts';
import { installWebApp } from './web-app.ts';

/** The modules a gateway forwards to: those with a URL that this process does not run. */
function frontedElsewhere(config: Config): ServiceName[] {
  return (Object.keys(config.upstreams) as ServiceName[]).filter((name) => !config.services.includes(name));
}

/**
 * Authenticates every request and injects the caller's identity, answers the web app's origin,
 * forwards the routes of the modules running elsewhere, and serves the web app at `/`.
 */
async function createGateway(ctx: FrontContext, needs: Needs<'users'>): Promise<FrontModule> {
  const { config, internalToken } = ctx;
  // The gateway reads accounts from the directory the services of this process use.
  const users = needs.users;
  if (!users) throw new Error('the gateway has no user directory');
  const auth = ctx.running.auth;
  const remote = auth
    ? undefined
    : await connectRemoteVerifier({ auth: ctx.clientOf('auth'), issuer: config.publicUrl, bus: ctx.bus, pollRevocations: !ctx.hintsArrive, log: ctx.log });
  const verifier = auth?.api.verifier ?? remote?.verifier;
  if (!verifier) throw new Error('the gateway has no token verifier');
  const upstreams: Partial<Record<ServiceName, Upstream>> = {};
  for (const name of frontedElsewhere(config)) upstreams[name] = { url: config.upstreams[name] as string, routes: ctx.routeAccess[name] };

  return {
    async registerHooks(app) {
      await allowWebAppOrigin(app, config);
      installAuthentication(app, verifier, internalToken, users, [config.publicUrl, config.webUrl]);
    },
    async registerRoutes(app) {
      if (Object.keys(upstreams).length > 0) await installProxy(app, upstreams);
      installWebApp(app, config);
    },
    stop() {
      remote?.stop();
    },
  };
}

export const gatewayModule = defineFront({
  name: 'gateway',
  fronts: frontedElsewhere,
  needs: ['users'],
  create: createGateway,
});
