import { ClientSecretPost } from 'openid-client';
import { DiscoveredIssuer } from './discovery.ts';
import { OidcProvider } from './oidc.ts';
import { usableName, verifiedProfile } from './provider.ts';

export function googleProvider(options: { issuer: string; clientId: string; clientSecret: string; redirectUri: string }): OidcProvider {
  return new OidcProvider({
    issuer: new DiscoveredIssuer(options.issuer, options.clientId, ClientSecretPost(options.clientSecret)),
    redirectUri: options.redirectUri,
    scope: 'openid email profile',
    profile: (claims) => verifiedProfile(claims, usableName(claims.name)),
  });
}
