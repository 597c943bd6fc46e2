import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import { engineOf } from './database.ts';

/**
 * Waits for, then holds until its transaction ends, the lock on `key` (a user id, say) within
 * `namespace` (what is counted: 'devices.owner'). A count-then-insert that takes the lock first is
 * atomic against every other that does, on any instance: this is how a cap (a plan limit, a MAX_*
 * setting) holds under parallel requests (docs/plans.md).
 *
 * PostgreSQL: `pg_advisory_xact_lock(namespace, key)`, the two-int4 key space (apart from the
 * single-bigint keys of the retention job). The namespace is the first four bytes of its SHA-256
 * and the key its low 32 bits: a collision only serialises two unrelated writers a little.
 *
 * SQLite: nothing to do. A process holds one connection, which Kysely lends to one transaction at a
 * time, and transactions begin IMMEDIATE (database.ts), so a second process waits for the write lock
 * at BEGIN rather than counting from a snapshot the first is about to make stale.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any module's tables
export async function lockKey(trx: Kysely<any>, namespace: string, key: number): Promise<void> {
  // Outside a transaction the lock would end with the statement that takes it.
  if (!trx.isTransaction) throw new Error(`lockKey(${namespace}) needs a transaction`);
  if (engineOf(trx) === 'sqlite') return;
  await sql`select pg_advisory_xact_lock(${namespaceKey(namespace)}, ${key | 0})`.execute(trx);
}

const namespaceKeys = new Map<string, number>();

function namespaceKey(namespace: string): number {
  let key = namespaceKeys.get(namespace);
  if (key === undefined) {
    key = createHash('sha256').update(namespace).digest().readInt32BE(0);
    namespaceKeys.set(namespace, key);
  }
  return key;
}

/**
 * lockKey for many keys of one namespace at once, in ascending order (two transactions locking overlapping sets never
 * wait for each other in a circle): one statement on PostgreSQL, nothing to do on SQLite.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any module's tables
export async function lockKeys(trx: Kysely<any>, namespace: string, keys: readonly number[]): Promise<void> {
  if (!trx.isTransaction) throw new Error(`lockKeys(${namespace}) needs a transaction`);
  if (engineOf(trx) === 'sqlite' || keys.length === 0) return;
  const sorted = [...new Set(keys.map((key) => key | 0))].sort((a, b) => a - b);
  // unnest yields the (sorted) array's elements in order.
  await sql`select pg_advisory_xact_lock(${namespaceKey(namespace)}, key) from unnest(${sorted}::int4[]) as keys (key)`.execute(trx);
}
