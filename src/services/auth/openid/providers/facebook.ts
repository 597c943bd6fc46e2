import { createHmac } from 'node:crypto';
import {
  allowInsecureRequests,
  authorizationCodeGrant,
  buildAuthorizationUrl,
  calculatePKCECodeChallenge,
  ClientSecretPost,
  Configuration,
  fetchProtectedResource,
} from 'openid-client';
import { SocialLoginFailure } from '../failures.ts';
import { allowsPlainHttp, PROVIDER_TIMEOUT_SECONDS } from './discovery.ts';
import { grantFailure, responseUrl } from './oidc.ts';
import { usableEmail, usableName, usableSubject } from './provider.ts';
import type { FlowSecrets, ProviderProfile, SocialProvider } from './provider.ts';

export interface FacebookOptions {
  clientId: string;
  clientSecret: string;
  /** The login dialog, the token endpoint and the Graph API's /me (OIDC_FACEBOOK_*_URL). */
  authUrl: string;
  tokenUrl: string;
  userinfoUrl: string;
  redirectUri: string;
}

/**
 * Facebook Login for the web: OAuth 2.0 code flow (state, PKCE S256) through openid-client, then the
 * Graph API for the profile. Facebook asserts no verified e-mail, so its address never links to an
 * existing account.
 */
export class FacebookProvider implements SocialProvider {
  private readonly options: FacebookOptions;
  private readonly configuration: Configuration;

  constructor(options: FacebookOptions) {
    this.options = options;
    this.configuration = new Configuration(
      { issuer: new URL(options.authUrl).origin, authorization_endpoint: options.authUrl, token_endpoint: options.tokenUrl },
      options.clientId,
      undefined,
      ClientSecretPost(options.clientSecret),
    );
    this.configuration.timeout = PROVIDER_TIMEOUT_SECONDS;
    if ([options.authUrl, options.tokenUrl, options.userinfoUrl].every(allowsPlainHttp)) allowInsecureRequests(this.configuration);
  }

  async authorizationUrl(flow: FlowSecrets): Promise<URL> {
    return buildAuthorizationUrl(this.configuration, {
      redirect_uri: this.options.redirectUri,
      response_type: 'code',
      scope: 'email public_profile',
      state: flow.state,
      code_challenge: await calculatePKCECodeChallenge(flow.codeVerifier),
      code_challenge_method: 'S256',
    });
  }

  async complete(callback: URLSearchParams, flow: FlowSecrets): Promise<ProviderProfile> {
    const tokens = await authorizationCodeGrant(this.configuration, responseUrl(this.options.redirectUri, callback), {
      pkceCodeVerifier: flow.codeVerifier,
      expectedState: flow.state,
    }).catch((error: unknown) => {
      throw grantFailure(error);
    });
    const me = new URL(this.options.userinfoUrl);
    // Graph API calls made with an app secret prove it (Facebook's appsecret_proof).
    me.searchParams.set('appsecret_proof', createHmac('sha256', this.options.clientSecret).update(tokens.access_token).digest('hex'));
    const response = await fetchProtectedResource(this.configuration, tokens.access_token, me, 'GET').catch((error: unknown) => {
      throw grantFailure(error);
    });
    if (!response.ok) throw new SocialLoginFailure('exchange_failed', `the Graph API answered ${response.status}`);
    const profile = (await response.json().catch(() => null)) as Record<string, unknown> | null;
    const subject = usableSubject(profile?.id);
    if (!subject) throw new SocialLoginFailure('exchange_failed', 'the Graph API answered no user id');
    return { subject, email: usableEmail(profile?.email), emailVerified: false, name: usableName(profile?.name) };
  }
}
