import { randomBytes } from 'node:crypto';
import { HOTP, Secret, TOTP } from 'otpauth';
import { safeEqual } from '../../../platform/crypto.ts';

/** RFC 6238 as every authenticator app expects it: SHA1, 6 digits, 30-second steps, 20-byte secret. */
const PERIOD_SECONDS = 30;
const DIGITS = 6;
const SECRET_BYTES = 20;
/** Accept the previous and the next step too, for clock drift. */
const WINDOW = 1;

export function newTotpSecret(): Buffer {
  return randomBytes(SECRET_BYTES);
}

export function base32(secret: Buffer): string {
  return new Secret({ buffer: Uint8Array.from(secret).buffer }).base32;
}

export function otpauthUrl(secret: Buffer, issuer: string, account: string): string {
  return new TOTP({
    issuer,
    label: account,
    secret: new Secret({ buffer: Uint8Array.from(secret).buffer }),
    algorithm: 'SHA1',
    digits: DIGITS,
    period: PERIOD_SECONDS,
  }).toString();
}

export function currentStep(now = Date.now()): number {
  return Math.floor(now / 1000 / PERIOD_SECONDS);
}

/** The time step whose code `code` is, within the window around now; undefined when none matches. */
export function matchingStep(secret: Buffer, code: string, now = Date.now()): number | undefined {
  if (!/^\d{6}$/.test(code)) return undefined;
  const otpSecret = new Secret({ buffer: Uint8Array.from(secret).buffer });
  const step = currentStep(now);
  let matched: number | undefined;
  // Every candidate is compared, so the time taken does not tell which step matched.
  for (let candidate = step - WINDOW; candidate <= step + WINDOW; candidate++) {
    const expected = HOTP.generate({ secret: otpSecret, algorithm: 'SHA1', digits: DIGITS, counter: candidate });
    if (safeEqual(expected, code) && matched === undefined) matched = candidate;
  }
  return matched;
}
