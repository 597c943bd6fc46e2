import { AppError } from '../errors.ts';

/**
 * Password checks one client may have running or waiting at once. Hashes take turns (passwords.ts
 * runs at most cores − 1 together), so a client firing logins in parallel would otherwise fill the
 * queue and delay everyone else's sign-in; with a share it delays others by at most two hashes.
 */
export const MAX_HASHES_PER_CLIENT = 2;

/** Counts each client's password checks in flight; over its share the client is told to come back in a second. */
export class ClientHashShares {
  private readonly max: number;
  private readonly inFlight = new Map<string, number>();

  /** `max` Infinity: no share (RATE_LIMITS=off). */
  constructor(max: number) {
    this.max = max;
  }

  /** Takes one of the client's shares, or throws 429 RATE_LIMITED when it holds them all; call the returned function when done. */
  take(client: string): () => void {
    const held = this.inFlight.get(client) ?? 0;
    if (held >= this.max) {
      throw new AppError('RATE_LIMITED', 'Too many sign-ins from this client at once; try again in 1 s', { headers: { 'retry-after': '1' } });
    }
    this.inFlight.set(client, held + 1);
    return () => {
      const left = (this.inFlight.get(client) ?? 1) - 1;
      if (left > 0) this.inFlight.set(client, left);
      else this.inFlight.delete(client);
    };
  }

  /** Clients holding a share now. */
  get clients(): number {
    return this.inFlight.size;
  }
}
