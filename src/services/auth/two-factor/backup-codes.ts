import { randomBytes, randomInt, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

export const BACKUP_CODE_COUNT = 10;

// Crockford's base32: no i, l, o or u, so a code read aloud or retyped survives.
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const CODE_LENGTH = 10;
// scrypt (4 MiB, ~15 ms) on libuv's pool, per-code salt: 2^50 guesses at that cost are out of reach
// offline, while checking a user's ten codes stays cheap enough for a sign-in.
const SCRYPT = { N: 4096, r: 8, p: 1, maxmem: 32 * 1024 * 1024 } as const;
const KEY_LENGTH = 32;

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number, options: typeof SCRYPT) => Promise<Buffer>;

/** Ten codes shaped `xxxxx-xxxxx`, each 50 random bits. */
export function newBackupCodes(): string[] {
  return Array.from({ length: BACKUP_CODE_COUNT }, () => {
    const chars = Array.from({ length: CODE_LENGTH }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');
    return `${chars.slice(0, 5)}-${chars.slice(5)}`;
  });
}

/** Case, spaces and dashes do not matter; o, i and l read as 0, 1 and 1. Undefined when it cannot be a backup code. */
export function normalizeBackupCode(input: string): string | undefined {
  const code = input
    .toLowerCase()
    .replace(/[\s-]/g, '')
    .replace(/o/g, '0')
    .replace(/[il]/g, '1');
  if (code.length !== CODE_LENGTH) return undefined;
  for (const char of code) if (!ALPHABET.includes(char)) return undefined;
  return code;
}

/** `salt.hash`, both base64url: each code has its own salt. */
export async function hashBackupCode(code: string): Promise<string> {
  const normalized = normalizeBackupCode(code) ?? code;
  const salt = randomBytes(16);
  const hash = await scryptAsync(normalized, salt, KEY_LENGTH, SCRYPT);
  return `${salt.toString('base64url')}.${hash.toString('base64url')}`;
}

export async function backupCodeMatches(stored: string, normalized: string): Promise<boolean> {
  const [salt, hash] = stored.split('.');
  if (!salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scryptAsync(normalized, Buffer.from(salt, 'base64url'), expected.length || KEY_LENGTH, SCRYPT);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
