import { authorizationCodeGrant, buildAuthorizationUrl, calculatePKCECodeChallenge, ClientError, ResponseBodyError } from 'openid-client';
import type { IDToken } from 'openid-client';
import { SocialLoginFailure } from '../failures.ts';
import type { DiscoveredIssuer } from './discovery.ts';
import type { FlowSecrets, ProviderProfile, SocialProvider } from './provider.ts';

export interface OidcProviderOptions {
  issuer: DiscoveredIssuer;
  redirectUri: string;
  scope: string;
  /** More authorization parameters, e.g. Apple's response_mode=form_post. */
  authorizationParameters?: Record<string, string>;
  /** Who signed in, from the verified id_token claims and the callback's other fields. */
  profile(claims: IDToken, callback: URLSearchParams): ProviderProfile;
}

/** Authorization-response parameters openid-client checks; others (Apple's `user`, Google's `scope`) stay out. */
const RESPONSE_PARAMETERS = ['code', 'state', 'iss'];

/**
 * An OpenID Connect provider (Google, Apple) through openid-client: code flow with PKCE S256, state
 * and nonce; the id_token's signature (the issuer's JWKS), iss, aud, exp and nonce are checked.
 */
export class OidcProvider implements SocialProvider {
  private readonly options: OidcProviderOptions;

  constructor(options: OidcProviderOptions) {
    this.options = options;
  }

  async authorizationUrl(flow: FlowSecrets): Promise<URL> {
    const configuration = await this.options.issuer.get();
    return buildAuthorizationUrl(configuration, {
      redirect_uri: this.options.redirectUri,
      response_type: 'code',
      scope: this.options.scope,
      state: flow.state,
      nonce: flow.nonce,
      code_challenge: await calculatePKCECodeChallenge(flow.codeVerifier),
      code_challenge_method: 'S256',
      ...this.options.authorizationParameters,
    });
  }

  async complete(callback: URLSearchParams, flow: FlowSecrets): Promise<ProviderProfile> {
    const configuration = await this.options.issuer.get().catch((error: unknown) => {
      throw new SocialLoginFailure('provider_unavailable', `discovery of ${this.options.issuer.issuer} failed`, { cause: error });
    });
    const tokens = await authorizationCodeGrant(configuration, responseUrl(this.options.redirectUri, callback), {
      pkceCodeVerifier: flow.codeVerifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
      idTokenExpected: true,
    }).catch((error: unknown) => {
      throw grantFailure(error);
    });
    const claims = tokens.claims();
    if (!claims) throw new SocialLoginFailure('invalid_id_token', 'the token response has no id_token');
    return this.options.profile(claims, callback);
  }
}

/** The redirect URI with the authorization response's parameters, as openid-client reads it. */
export function responseUrl(redirectUri: string, callback: URLSearchParams): URL {
  const url = new URL(redirectUri);
  for (const name of RESPONSE_PARAMETERS) {
    const value = callback.get(name);
    if (value !== null) url.searchParams.set(name, value);
  }
  return url;
}

/** openid-client failure codes that concern the id_token itself. */
const ID_TOKEN_CODES = new Set(['OAUTH_JWT_CLAIM_COMPARISON_FAILED', 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED', 'OAUTH_KEY_SELECTION_FAILED']);

/** Sorts a failed code exchange into the reason the client is told. */
export function grantFailure(error: unknown): SocialLoginFailure {
  if (error instanceof SocialLoginFailure) return error;
  if (error instanceof ResponseBodyError) {
    return new SocialLoginFailure('exchange_failed', `the token endpoint answered ${error.status} ${error.error}`, { cause: error });
  }
  if (error instanceof ClientError) {
    const detail = error.cause instanceof Error ? error.cause.message : '';
    if (ID_TOKEN_CODES.has(error.code ?? '') || (error.code === 'OAUTH_INVALID_RESPONSE' && /JWT|ID Token/.test(detail))) {
      return new SocialLoginFailure('invalid_id_token', `${error.message}: ${detail}`, { cause: error });
    }
    if (error.code === 'OAUTH_TIMEOUT') return new SocialLoginFailure('provider_unavailable', error.message, { cause: error });
    return new SocialLoginFailure('exchange_failed', `${error.message}${detail ? `: ${detail}` : ''}`, { cause: error });
  }
  // fetch rejects with this TypeError when the provider cannot be reached.
  if (error instanceof TypeError && error.message === 'fetch failed') return new SocialLoginFailure('provider_unavailable', error.message, { cause: error });
  return new SocialLoginFailure('exchange_failed', error instanceof Error ? error.message : String(error), { cause: error });
}
