import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** An unguessable opaque token (CSPRNG), URL-safe. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Opaque tokens are stored only as this digest, so a database leak reveals none of them. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}

/** Compares secrets in time independent of where they differ. */
export function safeEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right);
}
