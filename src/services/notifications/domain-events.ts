/** Domain events the notifications module publishes. */
declare module '../../platform/bus.ts' {
  interface DomainEvents {
    /** Hint: deliveries were queued (or queued again); every instance's worker looks for due ones now. */
    'notifications.deliveries.queued': Record<string, never>;
    /** Hint: rules were created, changed or removed; every instance reads its rule index again. */
    'notifications.rules.changed': Record<string, never>;
  }
}

export {};
