import { ReadThroughCache } from '../../../platform/cache.ts';
import type { UserRepository } from './repository.ts';
import { isActive } from './view.ts';

const TTL_MS = 5000;
const MAX_ENTRIES = 50_000;

interface AccountState {
  expirationTime: number | null;
  /** Exists and is neither disabled nor expired when read. */
  usable: boolean;
}

/**
 * Whether an account is active (exists, not disabled, not expired), remembered for 5 seconds so
 * GET /validate costs no query per request. Disabling and deleting also revoke the sessions, which
 * the token check sees at once; this cache only delays an administrator's change of expirationTime.
 */
export class UserStatusCache {
  readonly #cache = new ReadThroughCache<number, AccountState>({ ttlMs: TTL_MS, maxEntries: MAX_ENTRIES });
  readonly #read: (userId: number) => Promise<AccountState>;

  constructor(users: UserRepository) {
    this.#read = async (userId) => {
      const row = await users.findById(userId);
      return { expirationTime: row?.expiration_time ?? null, usable: row !== undefined && isActive(row) };
    };
  }

  async isActive(userId: number): Promise<boolean> {
    const { usable, expirationTime } = await this.#cache.get(userId, this.#read);
    return usable && (expirationTime === null || expirationTime > Date.now());
  }

  /** Called once a change of the account has committed: a read in flight that predates it is not kept. */
  forget(userId: number): void {
    this.#cache.invalidate(userId);
  }
}
