import type { ClientAuth } from 'openid-client';
import { AppleClientSecret } from './apple-client-secret.ts';
import type { AppleClientSecretOptions } from './apple-client-secret.ts';
import { DiscoveredIssuer } from './discovery.ts';
import { OidcProvider } from './oidc.ts';
import { usableName, verifiedProfile } from './provider.ts';

/**
 * Sign in with Apple: OpenID Connect with `response_mode=form_post` (the callback is a POST), and a
 * client secret that is a JWT signed with the team's key. The name arrives only on the first
 * authorization, as the `user` form field, never in the id_token.
 */
export function appleProvider(options: Omit<AppleClientSecretOptions, 'audience'> & { issuer: string; redirectUri: string }): OidcProvider {
  const secret = new AppleClientSecret({ ...options, audience: options.issuer });
  // client_secret_post with a fresh secret; oauth4webapi awaits a ClientAuth that returns a promise.
  const clientAuth: ClientAuth = async (_server, client, body) => {
    body.set('client_id', client.client_id);
    body.set('client_secret', await secret.current());
  };
  return new OidcProvider({
    issuer: new DiscoveredIssuer(options.issuer, options.clientId, clientAuth),
    redirectUri: options.redirectUri,
    scope: 'openid name email',
    authorizationParameters: { response_mode: 'form_post' },
    profile: (claims, callback) => verifiedProfile(claims, appleName(callback.get('user'))),
  });
}

/** The `user` field of the first authorization: `{"name":{"firstName":"…","lastName":"…"},"email":"…"}`. */
export function appleName(user: string | null): string | undefined {
  if (!user) return undefined;
  try {
    const parsed = JSON.parse(user) as { name?: { firstName?: unknown; lastName?: unknown } } | null;
    const parts = [parsed?.name?.firstName, parsed?.name?.lastName].filter((part): part is string => typeof part === 'string');
    return usableName(parts.map((part) => part.trim()).filter(Boolean).join(' '));
  } catch {
    return undefined;
  }
}
