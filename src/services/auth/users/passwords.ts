import { hash, verify } from '@node-rs/argon2';
import type { Algorithm } from '@node-rs/argon2';

// Algorithm.Argon2id; the enum is a const enum, which type stripping cannot inline.
const ARGON2ID = 2 as Algorithm;

// OWASP's argon2id recommendation: 19 MiB, 2 iterations, 1 lane. @node-rs/argon2 runs on libuv's pool, off the event loop.
const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS);
}

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}
