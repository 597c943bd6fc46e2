import { createPrivateKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { ConfigError } from '../../../../config.ts';
import type { Config } from '../../../../config.ts';
import { GoogleIdTokenVerifier } from '../google-id-token.ts';
import { appleProvider } from './apple.ts';
import { DiscoveredIssuer } from './discovery.ts';
import { FacebookProvider } from './facebook.ts';
import { googleProvider } from './google.ts';
import type { ProviderName, SocialProvider } from './provider.ts';

export const CALLBACK_PATH = '/api/auth/openid/callback';

export interface ConfiguredProviders {
  /** The providers of the redirect flow whose client id (and secret or key) are set. */
  redirect: Map<ProviderName, SocialProvider>;
  /** The mobile id_token exchange, when OIDC_GOOGLE_AUDIENCES (or the client id) is set. */
  googleIdTokens: GoogleIdTokenVerifier | undefined;
}

/** Builds the providers the configuration enables; a half-configured provider stops the start. */
export function configureProviders(oidc: Config['oidc'], publicUrl: string): ConfiguredProviders {
  const redirectUri = `${publicUrl}${CALLBACK_PATH}`;
  const redirect = new Map<ProviderName, SocialProvider>();
  const { google, facebook, apple } = oidc;

  if (google.clientId && google.clientSecret) {
    redirect.set('google', googleProvider({ issuer: google.issuer, clientId: google.clientId, clientSecret: google.clientSecret, redirectUri }));
  } else if (google.clientSecret) {
    throw new ConfigError('OIDC_GOOGLE_CLIENT_ID', 'required when OIDC_GOOGLE_CLIENT_SECRET is set');
  }
  const audiences = google.audiences;
  const googleIdTokens =
    audiences.length > 0 ? new GoogleIdTokenVerifier(new DiscoveredIssuer(google.issuer, google.clientId ?? (audiences[0] as string)), audiences) : undefined;

  if (facebook.clientId || facebook.clientSecret) {
    if (!facebook.clientId) throw new ConfigError('OIDC_FACEBOOK_CLIENT_ID', 'required when OIDC_FACEBOOK_CLIENT_SECRET is set');
    if (!facebook.clientSecret) throw new ConfigError('OIDC_FACEBOOK_CLIENT_SECRET', 'required when OIDC_FACEBOOK_CLIENT_ID is set');
    redirect.set('facebook', new FacebookProvider({ ...facebook, clientId: facebook.clientId, clientSecret: facebook.clientSecret, redirectUri }));
  }

  if (apple.clientId || apple.teamId || apple.keyId || apple.privateKeyPem) {
    const required = { OIDC_APPLE_CLIENT_ID: apple.clientId, OIDC_APPLE_TEAM_ID: apple.teamId, OIDC_APPLE_KEY_ID: apple.keyId, OIDC_APPLE_PRIVATE_KEY: apple.privateKeyPem };
    for (const [variable, value] of Object.entries(required)) {
      if (!value) throw new ConfigError(variable, 'required when any OIDC_APPLE_* sign-in variable is set');
    }
    redirect.set(
      'apple',
      appleProvider({
        clientId: apple.clientId as string,
        teamId: apple.teamId as string,
        keyId: apple.keyId as string,
        privateKey: appleSigningKey(apple.privateKeyPem as string),
        issuer: apple.issuer,
        redirectUri,
      }),
    );
  }
  return { redirect, googleIdTokens };
}

/** The .p8 file Apple hands out: a P-256 key in PKCS#8 PEM. */
function appleSigningKey(pem: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    throw new ConfigError('OIDC_APPLE_PRIVATE_KEY', 'not a readable private key');
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new ConfigError('OIDC_APPLE_PRIVATE_KEY', 'must be the P-256 (ES256) key from Apple (.p8)');
  }
  return key;
}
