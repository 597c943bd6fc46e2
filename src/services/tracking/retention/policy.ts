import type { Entitlement } from '../../billing/module.ts';

/**
 * How long history stays, as the retention job asks it (DESIGN §5.8): the owner's plan's
 * `historyDays` plus PLAN_GRACE_DAYS, or for ever. Billing's entitlement answers it in a full
 * install; tracking knows only this interface. The job derives what holds across owners (which
 * whole partitions may go) from the cutoffs of the owners whose devices hold data.
 */
export interface RetentionPolicy {
  /** The time (epoch ms) before which the owner's positions and events go, or null: they all stay. */
  cutoffOf(ownerId: number, now: number): Promise<number | null>;
}

/** The unlimited default plan: everything stays. */
export const keepEverything: RetentionPolicy = {
  cutoffOf: () => Promise.resolve(null),
};

/** The owner's plan decides: what lies before the start of its history window (grace included) goes. */
export function planRetention(entitlement: Entitlement): RetentionPolicy {
  return {
    cutoffOf: async (ownerId, now) => (await entitlement.historyWindow(ownerId, now)).keptFrom,
  };
}
