import { randomBytes } from 'node:crypto';

/** 32 symbols without the look-alikes 0/O and 1/I, so a printed token reads back without doubt. */
export const CLAIM_ALPHABET = '23456789ABCDEFGHJKLMNPQRSTUVWXYZ';
export const CLAIM_TOKEN_LENGTH = 12;

const NORMALISED = new RegExp(`^[${CLAIM_ALPHABET}]{${CLAIM_TOKEN_LENGTH}}$`);

/** A new token from the CSPRNG: 12 symbols of 5 bits each (60 bits); 32 divides 256, so no symbol is favoured. */
export function generateClaimToken(): string {
  const bytes = randomBytes(CLAIM_TOKEN_LENGTH);
  let token = '';
  for (const byte of bytes) token += CLAIM_ALPHABET[byte & 31];
  return token;
}

/**
 * The stored form of what a user typed: case and dashes (and spaces, as people copy them) do not
 * matter. Undefined when it cannot be a token at all.
 */
export function normaliseClaimToken(input: string): string | undefined {
  const token = input.replace(/[-\s]/g, '').toUpperCase();
  return NORMALISED.test(token) ? token : undefined;
}

/** The printed form: XXXX-XXXX-XXXX. */
export function formatClaimToken(token: string): string {
  return `${token.slice(0, 4)}-${token.slice(4, 8)}-${token.slice(8, 12)}`;
}
