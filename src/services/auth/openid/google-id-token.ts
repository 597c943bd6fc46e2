import { createRemoteJWKSet, errors, jwtVerify } from 'jose';
import type { JWTVerifyGetKey } from 'jose';
import { AppError } from '../errors.ts';
import { SocialLoginFailure } from './failures.ts';
import { allowsPlainHttp } from './providers/discovery.ts';
import type { DiscoveredIssuer } from './providers/discovery.ts';
import { verifiedProfile } from './providers/provider.ts';
import type { ProviderProfile } from './providers/provider.ts';

/** Google's id_tokens name their issuer with or without the scheme. */
const GOOGLE_ISSUER = 'https://accounts.google.com';
const GOOGLE_BARE_ISSUER = 'accounts.google.com';
const MAX_ID_TOKEN_LENGTH = 8192;
/** Allowed clock difference with the issuer when checking exp, iat and nbf. */
const CLOCK_TOLERANCE_SECONDS = 30;
const ASYMMETRIC_ALGORITHMS = new Set(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519']);

/**
 * The mobile exchange's check of a Google id_token the app obtained itself: signature by a key of the
 * issuer's JWKS (found by discovery), iss, aud among OIDC_GOOGLE_AUDIENCES, exp, and a verified address.
 * No nonce: the server never saw the app's request to Google.
 */
export class GoogleIdTokenVerifier {
  private readonly discovered: DiscoveredIssuer;
  private readonly audiences: string[];
  private readonly issuers: string[];
  private keys: { jwksUri: string; getKey: JWTVerifyGetKey; algorithms: string[] } | undefined;

  constructor(discovered: DiscoveredIssuer, audiences: string[]) {
    this.discovered = discovered;
    this.audiences = audiences;
    this.issuers = discovered.issuer === GOOGLE_ISSUER ? [GOOGLE_ISSUER, GOOGLE_BARE_ISSUER] : [discovered.issuer];
  }

  /** Throws AppError: ID_TOKEN_* (401), or UPSTREAM_UNAVAILABLE when Google's keys cannot be fetched. */
  async verify(idToken: string): Promise<ProviderProfile> {
    if (idToken.length > MAX_ID_TOKEN_LENGTH) throw new AppError('ID_TOKEN_INVALID');
    const { getKey, algorithms } = await this.signingKeys();
    let claims: Record<string, unknown>;
    try {
      ({ payload: claims } = await jwtVerify(idToken, getKey, {
        issuer: this.issuers,
        audience: this.audiences,
        algorithms,
        requiredClaims: ['sub', 'iat', 'exp'],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      }));
    } catch (error) {
      throw verificationError(error);
    }
    try {
      return verifiedProfile(claims, undefined);
    } catch (error) {
      const reason = error instanceof SocialLoginFailure ? error.reason : undefined;
      throw new AppError(reason === 'email_missing' || reason === 'email_unverified' ? 'ID_TOKEN_EMAIL_UNVERIFIED' : 'ID_TOKEN_INVALID');
    }
  }

  private async signingKeys(): Promise<{ getKey: JWTVerifyGetKey; algorithms: string[] }> {
    let metadata;
    try {
      metadata = (await this.discovered.get()).serverMetadata();
    } catch {
      throw new AppError('UPSTREAM_UNAVAILABLE', 'The id_token issuer cannot be reached; try again later');
    }
    const jwksUri = metadata.jwks_uri;
    if (!jwksUri || !(jwksUri.startsWith('https:') || allowsPlainHttp(jwksUri))) {
      throw new AppError('UPSTREAM_UNAVAILABLE', 'The id_token issuer publishes no https jwks_uri');
    }
    if (this.keys?.jwksUri !== jwksUri) {
      const advertised = metadata.id_token_signing_alg_values_supported?.filter((alg) => ASYMMETRIC_ALGORITHMS.has(alg));
      this.keys = {
        jwksUri,
        getKey: createRemoteJWKSet(new URL(jwksUri), { timeoutDuration: 5000 }),
        algorithms: advertised?.length ? advertised : ['RS256'],
      };
    }
    return this.keys;
  }
}

function verificationError(error: unknown): AppError {
  if (error instanceof errors.JWTExpired) return new AppError('ID_TOKEN_EXPIRED');
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'iss') return new AppError('ID_TOKEN_WRONG_ISSUER');
    if (error.claim === 'aud') return new AppError('ID_TOKEN_WRONG_AUDIENCE');
    return new AppError('ID_TOKEN_INVALID', `The id_token's ${error.claim} claim is invalid`);
  }
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid || (error instanceof TypeError && error.message === 'fetch failed')) {
    return new AppError('UPSTREAM_UNAVAILABLE', "The issuer's signing keys cannot be fetched; try again later");
  }
  return new AppError('ID_TOKEN_INVALID');
}
