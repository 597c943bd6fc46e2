export { parseStripeEvent } from './stripe.ts';
export { createAppleNotificationParser } from './apple.ts';
export type { AppleEnvironment, AppleNotificationParser, AppleNotificationParserConfig } from './apple.ts';
export { createGoogleNotificationParser } from './google.ts';
export type { GoogleNotificationParser, GoogleNotificationParserConfig } from './google.ts';
export { WebhookError } from './types.ts';
export type {
  BillingProvider,
  ProviderNotification,
  SkippedNotification,
  SubscriptionChange,
  SubscriptionStatus,
  WebhookErrorCode,
} from './types.ts';
