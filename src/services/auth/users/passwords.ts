import { availableParallelism } from 'node:os';
import { hash, verify } from '@node-rs/argon2';
import type { Algorithm } from '@node-rs/argon2';

// Algorithm.Argon2id; the enum is a const enum, which type stripping cannot inline.
const ARGON2ID = 2 as Algorithm;

// OWASP's argon2id recommendation: 19 MiB, 2 iterations, 1 lane. @node-rs/argon2 runs on libuv's pool, off the event loop.
const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

/**
 * Hashes running at once, leaving one core to the event loop: with every core hashing, a burst of
 * logins would starve the loop of CPU and stall every other request. Further hashes wait their turn.
 */
const MAX_CONCURRENT_HASHES = Math.max(1, availableParallelism() - 1);
let running = 0;
const waiting: (() => void)[] = [];

async function limited<T>(work: () => Promise<T>): Promise<T> {
  // A finishing hash hands its slot straight to the next in line, so the count never overshoots.
  if (running < MAX_CONCURRENT_HASHES) running += 1;
  else await new Promise<void>((resolve) => waiting.push(resolve));
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running -= 1;
  }
}

export function hashPassword(password: string): Promise<string> {
  return limited(() => hash(password, OPTIONS));
}

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await limited(() => verify(stored, password));
  } catch {
    return false;
  }
}
