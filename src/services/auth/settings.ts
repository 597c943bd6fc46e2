import { ConfigError } from '../../platform/env.ts';
import type { EnvReader } from '../../platform/env.ts';

/** The auth module's settings, read by config.ts with every module's. */
export interface AuthSettings {
  jwtPrivateKeyPem: string | undefined;
  /** Secret from which auth derives the key encrypting TOTP secrets at rest; unset → generated in DATA_DIR. */
  totpEncryptionKey: string | undefined;
  ttl: {
    accessToken: number;
    refreshToken: number;
    twoFactorTempToken: number;
    totpSetup: number;
    passwordReset: number;
    emailVerification: number;
  };
  registrationEnabled: boolean;
  admin: { email: string; password: string } | undefined;
  oidc: {
    google: { clientId: string | undefined; clientSecret: string | undefined; issuer: string; audiences: string[] };
    facebook: {
      clientId: string | undefined;
      clientSecret: string | undefined;
      authUrl: string;
      tokenUrl: string;
      userinfoUrl: string;
    };
    apple: {
      clientId: string | undefined;
      teamId: string | undefined;
      keyId: string | undefined;
      privateKeyPem: string | undefined;
      issuer: string;
    };
  };
}

export function readAuthSettings(read: EnvReader): AuthSettings {
  const googleClientId = read.optional('OIDC_GOOGLE_CLIENT_ID');
  const adminEmail = read.optional('ADMIN_EMAIL');
  const adminPassword = read.optional('ADMIN_PASSWORD');
  if (adminEmail && !adminPassword) throw new ConfigError('ADMIN_PASSWORD', 'required when ADMIN_EMAIL is set');
  if (adminPassword && !adminEmail) throw new ConfigError('ADMIN_EMAIL', 'required when ADMIN_PASSWORD is set');
  return {
    jwtPrivateKeyPem: read.pem('JWT_PRIVATE_KEY'),
    totpEncryptionKey: read.secret('TOTP_ENCRYPTION_KEY', 32),
    ttl: {
      accessToken: read.int('ACCESS_TOKEN_TTL', 3600, 1, 86_400 * 30),
      refreshToken: read.int('REFRESH_TOKEN_TTL', 2_592_000, 1, 86_400 * 3650),
      twoFactorTempToken: read.int('TWO_FACTOR_TEMP_TOKEN_TTL', 300, 1, 86_400),
      totpSetup: read.int('TOTP_SETUP_TTL', 600, 1, 86_400),
      passwordReset: read.int('PASSWORD_RESET_TTL', 3600, 1, 86_400 * 30),
      emailVerification: read.int('EMAIL_VERIFICATION_TTL', 86_400, 1, 86_400 * 30),
    },
    registrationEnabled: read.bool('REGISTRATION_ENABLED', true),
    admin: adminEmail && adminPassword ? { email: adminEmail, password: adminPassword } : undefined,
    oidc: {
      google: {
        clientId: googleClientId,
        clientSecret: read.optional('OIDC_GOOGLE_CLIENT_SECRET'),
        issuer: read.providerUrl('OIDC_GOOGLE_ISSUER', 'https://accounts.google.com'),
        audiences: read.list('OIDC_GOOGLE_AUDIENCES', googleClientId ? [googleClientId] : []),
      },
      facebook: {
        clientId: read.optional('OIDC_FACEBOOK_CLIENT_ID'),
        clientSecret: read.optional('OIDC_FACEBOOK_CLIENT_SECRET'),
        authUrl: read.providerUrl('OIDC_FACEBOOK_AUTH_URL', 'https://www.facebook.com/v19.0/dialog/oauth'),
        tokenUrl: read.providerUrl('OIDC_FACEBOOK_TOKEN_URL', 'https://graph.facebook.com/v19.0/oauth/access_token'),
        userinfoUrl: read.providerUrl('OIDC_FACEBOOK_USERINFO_URL', 'https://graph.facebook.com/me?fields=id,name,email'),
      },
      apple: {
        clientId: read.optional('OIDC_APPLE_CLIENT_ID'),
        teamId: read.optional('OIDC_APPLE_TEAM_ID'),
        keyId: read.optional('OIDC_APPLE_KEY_ID'),
        privateKeyPem: read.pem('OIDC_APPLE_PRIVATE_KEY'),
        issuer: read.providerUrl('OIDC_APPLE_ISSUER', 'https://appleid.apple.com'),
      },
    },
  };
}
