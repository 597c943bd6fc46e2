import type { UserRepository } from './repository.ts';
import { isActive } from './view.ts';

const TTL_MS = 5000;
const MAX_ENTRIES = 50_000;

/**
 * Whether an account is active (exists, not disabled, not expired), remembered for 5 seconds so
 * GET /validate costs no query per request. Disabling and deleting also revoke the sessions, which
 * the token check sees at once; this cache only delays an administrator's change of expirationTime.
 */
export class UserStatusCache {
  private readonly users: UserRepository;
  private readonly entries = new Map<number, { expirationTime: number | null; usable: boolean; until: number }>();

  constructor(users: UserRepository) {
    this.users = users;
  }

  async isActive(userId: number): Promise<boolean> {
    const now = Date.now();
    let entry = this.entries.get(userId);
    if (!entry || entry.until <= now) {
      const row = await this.users.findById(userId);
      entry = { expirationTime: row?.expiration_time ?? null, usable: row !== undefined && isActive(row), until: now + TTL_MS };
      if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
      this.entries.set(userId, entry);
    }
    return entry.usable && (entry.expirationTime === null || entry.expirationTime > now);
  }

  forget(userId: number): void {
    this.entries.delete(userId);
  }
}
