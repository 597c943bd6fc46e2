import { allowInsecureRequests, discovery, enableNonRepudiationChecks } from 'openid-client';
import type { ClientAuth, Configuration } from 'openid-client';
import { isLoopbackHost } from '../../../../config.ts';

/** Seconds openid-client waits for a provider's answer. */
export const PROVIDER_TIMEOUT_SECONDS = 10;
const REDISCOVER_AFTER_MS = 24 * 3_600_000;

/**
 * Plain http only to this machine (the tests' local IdP); config.ts refuses other http provider URLs,
 * and this check keeps production on https whatever reaches it.
 */
export function allowsPlainHttp(url: string): boolean {
  const parsed = new URL(url);
  return parsed.protocol === 'http:' && isLoopbackHost(parsed.hostname);
}

/**
 * An OpenID Connect issuer's metadata, discovered on first use and kept for a day. A failed discovery
 * is not kept: the next sign-in tries again.
 */
export class DiscoveredIssuer {
  readonly issuer: string;
  private readonly clientId: string;
  private readonly clientAuth: ClientAuth | undefined;
  private cached: { configuration: Promise<Configuration>; at: number } | undefined;

  constructor(issuer: string, clientId: string, clientAuth?: ClientAuth) {
    this.issuer = issuer;
    this.clientId = clientId;
    this.clientAuth = clientAuth;
  }

  get(): Promise<Configuration> {
    if (this.cached && Date.now() - this.cached.at < REDISCOVER_AFTER_MS) return this.cached.configuration;
    const configuration = discovery(new URL(this.issuer), this.clientId, undefined, this.clientAuth, {
      // The id_token's signature is checked against the issuer's JWKS too, not only TLS to its token endpoint.
      execute: [...(allowsPlainHttp(this.issuer) ? [allowInsecureRequests] : []), enableNonRepudiationChecks],
      timeout: PROVIDER_TIMEOUT_SECONDS,
    });
    const entry = { configuration, at: Date.now() };
    this.cached = entry;
    configuration.catch(() => {
      if (this.cached === entry) this.cached = undefined;
    });
    return configuration;
  }
}
