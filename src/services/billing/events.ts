/** Domain events the billing module publishes. */
declare module '../../platform/bus.ts' {
  interface DomainEvents {
    /** A user's subscription records changed: every instance drops its cached entitlement of that user. */
    'billing.subscription.changed': SubscriptionChanged;
  }
}

export interface SubscriptionChanged {
  userId: number;
}
