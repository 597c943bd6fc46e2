import type { EnvReader } from '../../platform/env.ts';

/** The billing module's settings, read by config.ts with every module's. */
export interface BillingSettings {
  stripe: { webhookSecret: string | undefined };
  apple: {
    rootCertificates: Buffer[];
    bundleId: string | undefined;
    appAppleId: number | undefined;
    environment: 'Production' | 'Sandbox' | 'Xcode' | 'LocalTesting';
    /** OCSP revocation checks and certificate validity at the current time; turned off only by tests. */
    onlineChecks: boolean;
  };
  google: {
    pubsubAudience: string | undefined;
    pubsubServiceAccount: string | undefined;
    packageName: string | undefined;
    certsUrl: string;
  };
  /**
   * PLANS_FILE: the plans a subscription grants (docs/plans.md), read by the billing module; unset: one unlimited plan.
   * PLAN_GRACE_DAYS: days history is kept beyond what the owner's plan serves, so an upgrade brings it back.
   */
  plans: { file: string | undefined; graceDays: number };
}

export function readBillingSettings(read: EnvReader): BillingSettings {
  return {
    stripe: { webhookSecret: read.optional('STRIPE_WEBHOOK_SECRET') },
    apple: {
      rootCertificates: read.files('APPLE_ROOT_CERTS'),
      bundleId: read.optional('APPLE_BUNDLE_ID'),
      appAppleId: read.optionalInt('APPLE_APP_APPLE_ID'),
      environment: read.oneOf('APPLE_ENVIRONMENT', 'Production', ['Production', 'Sandbox', 'Xcode', 'LocalTesting']),
      onlineChecks: read.bool('APPLE_ONLINE_CHECKS', true),
    },
    google: {
      pubsubAudience: read.optional('GOOGLE_PUBSUB_AUDIENCE'),
      pubsubServiceAccount: read.optional('GOOGLE_PUBSUB_SERVICE_ACCOUNT'),
      packageName: read.optional('GOOGLE_PACKAGE_NAME'),
      certsUrl: read.providerUrl('GOOGLE_CERTS_URL', 'https://www.googleapis.com/oauth2/v1/certs'),
    },
    plans: { file: read.optional('PLANS_FILE'), graceDays: read.int('PLAN_GRACE_DAYS', 30, 0, 3650) },
  };
}
