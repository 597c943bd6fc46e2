import type { KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';

/** Apple accepts client secrets of up to six months; a short one limits what a leaked secret is worth. */
const LIFETIME_SECONDS = 3600;
const RENEW_BEFORE_SECONDS = 300;

export interface AppleClientSecretOptions {
  /** The Services ID (OIDC_APPLE_CLIENT_ID). */
  clientId: string;
  teamId: string;
  keyId: string;
  /** The P-256 key of the .p8 file. */
  privateKey: KeyObject;
  /** Apple's issuer, the JWT's audience. */
  audience: string;
}

/**
 * Apple's client secret is a JWT the client signs itself: ES256 with the key `kid`, issued by the team
 * (`iss`), about the Services ID (`sub`), for Apple (`aud`). Made once and reused until shortly before
 * it expires.
 */
export class AppleClientSecret {
  private readonly options: AppleClientSecretOptions;
  private cached: { jwt: Promise<string>; expiresAt: number } | undefined;

  constructor(options: AppleClientSecretOptions) {
    this.options = options;
  }

  current(): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    if (this.cached && this.cached.expiresAt - RENEW_BEFORE_SECONDS > now) return this.cached.jwt;
    const expiresAt = now + LIFETIME_SECONDS;
    const { clientId, teamId, keyId, privateKey, audience } = this.options;
    const jwt = new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: keyId })
      .setIssuer(teamId)
      .setSubject(clientId)
      .setAudience(audience)
      .setIssuedAt(now)
      .setExpirationTime(expiresAt)
      .sign(privateKey);
    this.cached = { jwt, expiresAt };
    return jwt;
  }
}
