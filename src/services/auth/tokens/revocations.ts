import type { EventBus } from '../../../platform/bus.ts';
import type { RevokedSession } from '../events.ts';

/**
 * Revoked session ids, each kept until the last access token of that session has expired.
 * Every process holds one; revocations reach it through the event bus, so checking costs a map lookup.
 */
export class RevocationList {
  private readonly until = new Map<string, number>();
  private nextPrune = 0;

  add(sessionId: string, untilMs: number): void {
    if (untilMs > (this.until.get(sessionId) ?? 0)) this.until.set(sessionId, untilMs);
    this.prune(Date.now());
  }

  has(sessionId: string): boolean {
    const until = this.until.get(sessionId);
    return until !== undefined && until > Date.now();
  }

  get size(): number {
    return this.until.size;
  }

  private prune(now: number): void {
    if (now < this.nextPrune) return;
    this.nextPrune = now + 60_000;
    for (const [sessionId, until] of this.until) if (until <= now) this.until.delete(sessionId);
  }
}

/** A revocation list kept current by the bus, seeded with the revocations that are still relevant. */
export function followRevocations(bus: EventBus, initial: RevokedSession[]): RevocationList {
  const list = new RevocationList();
  for (const session of initial) list.add(session.id, session.until);
  bus.on('auth.sessions.revoked', ({ sessions }) => {
    for (const session of sessions) list.add(session.id, session.until);
  });
  return list;
}
