import { SocialLoginFailure } from '../failures.ts';

export const PROVIDER_NAMES = ['google', 'facebook', 'apple'] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** Who signed in, as the provider tells it. */
export interface ProviderProfile {
  /** The provider's stable id of the user. */
  subject: string;
  email: string | undefined;
  /** Whether the provider asserted that the user controls `email`. */
  emailVerified: boolean;
  name: string | undefined;
}

/** The per-flow secrets kept between the redirect to the provider and its callback. */
export interface FlowSecrets {
  state: string;
  nonce: string;
  /** PKCE (S256) code verifier. */
  codeVerifier: string;
}

export interface SocialProvider {
  /** Where to send the browser to sign in; rejects when the provider cannot be reached. */
  authorizationUrl(flow: FlowSecrets): Promise<URL>;
  /** Exchanges the callback's code and returns who signed in; throws SocialLoginFailure. */
  complete(callback: URLSearchParams, flow: FlowSecrets): Promise<ProviderProfile>;
}

const MAX_SUBJECT = 255;
const MAX_EMAIL = 254;
const MAX_NAME = 255;

/**
 * The profile of an OpenID Connect id_token (Google, Apple). Both must assert a verified address:
 * Apple sends `email_verified` as the string "true", Google as a boolean.
 */
export function verifiedProfile(claims: Record<string, unknown>, name: string | undefined): ProviderProfile {
  const subject = usableSubject(claims.sub);
  if (!subject) throw new SocialLoginFailure('invalid_id_token', 'the id_token has no usable sub');
  const email = usableEmail(claims.email);
  if (!email) throw new SocialLoginFailure('email_missing', 'the id_token has no e-mail address');
  if (claims.email_verified !== true && claims.email_verified !== 'true') {
    throw new SocialLoginFailure('email_unverified', 'the provider does not assert the e-mail address as verified');
  }
  return { subject, email, emailVerified: true, name };
}

export function usableEmail(value: unknown): string | undefined {
  return typeof value === 'string' && value.length <= MAX_EMAIL && /^[^\s@]+@[^\s@]+$/.test(value) ? value.toLowerCase() : undefined;
}

export function usableName(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim().slice(0, MAX_NAME);
  return trimmed === '' ? undefined : trimmed;
}

export function usableSubject(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' && value.length <= MAX_SUBJECT ? value : undefined;
}
