import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** An unguessable opaque token (CSPRNG), URL-safe. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Opaque tokens are stored only as this digest, so a database leak reveals none of them. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}

/** A check of presented values against one fixed secret, whose digest is computed once (the gateway's hot path). */
export function secretMatcher(secret: string): (presented: string) => boolean {
  const expected = createHash('sha256').update(secret).digest();
  return (presented) => timingSafeEqual(createHash('sha256').update(presented).digest(), expected);
}

/** Compares secrets in time independent of where they differ. */
export function safeEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right);
}
