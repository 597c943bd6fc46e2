import type { FastifyBaseLogger } from 'fastify';
import { Type } from 'typebox';
import { ConfigError } from '../../config.ts';
import type { Config } from '../../config.ts';
import type { HttpApp } from '../../platform/http/app.ts';
import { AppError } from './errors.ts';
import { createAppleNotificationParser, createGoogleNotificationParser, parseStripeEvent, WebhookError } from './providers/index.ts';
import type { AppleNotificationParser, GoogleNotificationParser, ProviderNotification } from './providers/index.ts';
import { toWebhookResponse, WebhookResponse } from './schemas.ts';
import type { BillingService } from './service.ts';

/** Each provider's verification, or undefined when that provider is not configured (its webhook answers 400). */
export interface WebhookVerifiers {
  stripeSecret: string | undefined;
  apple: AppleNotificationParser | undefined;
  google: GoogleNotificationParser | undefined;
}

/** Builds the verifiers once at start; a half-configured provider is a configuration error, not a silent 400. */
export function createWebhookVerifiers(config: Config, log: FastifyBaseLogger): WebhookVerifiers {
  return {
    stripeSecret: config.stripe.webhookSecret,
    apple: appleVerifier(config.apple, log),
    google: googleVerifier(config.google),
  };
}

function appleVerifier(apple: Config['apple'], log: FastifyBaseLogger): AppleNotificationParser | undefined {
  const hasRoots = apple.rootCertificates.length > 0;
  if (!hasRoots && apple.bundleId === undefined) return undefined;
  if (!hasRoots) throw new ConfigError('APPLE_ROOT_CERTS', 'required when APPLE_BUNDLE_ID is set');
  if (apple.bundleId === undefined) throw new ConfigError('APPLE_BUNDLE_ID', 'required when APPLE_ROOT_CERTS is set');
  if (apple.environment === 'Production' && apple.appAppleId === undefined) {
    throw new ConfigError('APPLE_APP_APPLE_ID', 'required when APPLE_ENVIRONMENT is Production');
  }
  if (apple.environment === 'Xcode' || apple.environment === 'LocalTesting') {
    log.warn({ environment: apple.environment }, 'App Store notifications of this environment are unsigned and accepted unverified');
  }
  try {
    return createAppleNotificationParser({
      rootCertificates: apple.rootCertificates,
      bundleId: apple.bundleId,
      appAppleId: apple.appAppleId,
      environment: apple.environment,
      enableOnlineChecks: apple.onlineChecks,
    });
  } catch (error) {
    throw new ConfigError('APPLE_ROOT_CERTS', `not usable as root certificates (${error instanceof Error ? error.message : String(error)})`);
  }
}

function googleVerifier(google: Config['google']): GoogleNotificationParser | undefined {
  const settings = {
    GOOGLE_PUBSUB_AUDIENCE: google.pubsubAudience,
    GOOGLE_PUBSUB_SERVICE_ACCOUNT: google.pubsubServiceAccount,
    GOOGLE_PACKAGE_NAME: google.packageName,
  };
  const missing = Object.entries(settings).filter(([, value]) => value === undefined).map(([name]) => name);
  if (missing.length === 3) return undefined;
  const [firstMissing] = missing;
  if (firstMissing !== undefined) throw new ConfigError(firstMissing, 'required with the other GOOGLE_PUBSUB_* / GOOGLE_PACKAGE_NAME settings');
  return createGoogleNotificationParser({
    audience: google.pubsubAudience as string,
    serviceAccountEmail: google.pubsubServiceAccount as string,
    packageName: google.packageName as string,
    certsUrl: google.certsUrl,
  });
}

export interface WebhookRouteDeps {
  verifiers: WebhookVerifiers;
  service: BillingService;
}

const responses = { 200: WebhookResponse };
const OUTCOMES =
  'processed, duplicate (the idempotency key was seen before) and skipped (with a reason) answer 200; INVALID_SIGNATURE and ' +
  'INVALID_PAYLOAD 400; PROVIDER_NOT_CONFIGURED 400; a failure on our side 500, so the provider retries.';

/** Signed snapshots of App Store notifications; fields beyond signedPayload are tolerated, as Apple may add some. */
const AppleBody = Type.Object({ signedPayload: Type.String({ minLength: 1, maxLength: 262_144 }) });

/** A Pub/Sub push envelope; Pub/Sub sends more fields (attributes, publishTime, message_id) that are tolerated. */
const PubSubPushBody = Type.Object({
  message: Type.Object({
    data: Type.String({ minLength: 1, maxLength: 262_144 }),
    messageId: Type.String({ minLength: 1, maxLength: 255 }),
  }),
  subscription: Type.Optional(Type.String({ maxLength: 1024 })),
});

export async function registerWebhookRoutes(app: HttpApp, deps: WebhookRouteDeps): Promise<void> {
  const { verifiers, service } = deps;

  // Stripe signs the exact bytes it sent, so this scope keeps the body as a Buffer.
  await app.register(async (scope) => {
    scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    scope.post(
      '/webhooks/stripe',
      {
        schema: {
          tags: ['billing'],
          summary: 'Stripe webhook: customer.subscription.created/updated/deleted, invoice.paid, invoice.payment_failed',
          description: `The raw event, signed in the Stripe-Signature header with STRIPE_WEBHOOK_SECRET (300 s tolerance). ${OUTCOMES}`,
          response: responses,
        },
      },
      async (request) => {
        const secret = verifiers.stripeSecret;
        if (secret === undefined) throw new AppError('PROVIDER_NOT_CONFIGURED', 'Stripe webhooks are not configured (STRIPE_WEBHOOK_SECRET)');
        if (!Buffer.isBuffer(request.body)) throw new AppError('INVALID_PAYLOAD', 'A Stripe event is sent as application/json');
        const rawBody = request.body;
        const signature = request.headers['stripe-signature'];
        return handle(service, () => parseStripeEvent(rawBody, typeof signature === 'string' ? signature : undefined, secret));
      },
    );
  });

  await app.register(async (scope) => {
    // A body that is not JSON is the provider's payload problem: INVALID_PAYLOAD, like every other malformed webhook.
    const parseJson = scope.getDefaultJsonParser('error', 'ignore');
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      parseJson(request, body.toString(), (error, value) => (error ? done(new AppError('INVALID_PAYLOAD', 'The webhook body is not JSON')) : done(null, value)));
    });

    scope.post(
      '/webhooks/apple',
      {
        attachValidation: true,
        schema: {
          tags: ['billing'],
          summary: 'App Store Server Notifications V2',
          description: `signedPayload is verified against APPLE_ROOT_CERTS, APPLE_BUNDLE_ID and APPLE_ENVIRONMENT, with its transaction and renewal info. ${OUTCOMES}`,
          body: AppleBody,
          response: responses,
        },
      },
      async (request) => {
        const parser = verifiers.apple;
        if (parser === undefined) throw new AppError('PROVIDER_NOT_CONFIGURED', 'App Store notifications are not configured (APPLE_ROOT_CERTS, APPLE_BUNDLE_ID)');
        if (request.validationError) throw new AppError('INVALID_PAYLOAD', `App Store notification body: ${request.validationError.message}`);
        const body: unknown = request.body;
        return handle(service, () => parser.parse(body));
      },
    );

    scope.post(
      '/webhooks/google',
      {
        attachValidation: true,
        schema: {
          tags: ['billing'],
          summary: 'Google Play real-time developer notifications (Pub/Sub push)',
          description:
            'Authorization: Bearer <Pub/Sub OIDC token> (issuer, GOOGLE_PUBSUB_AUDIENCE, GOOGLE_PUBSUB_SERVICE_ACCOUNT with a verified e-mail); ' +
            `message.data is the base64 DeveloperNotification for GOOGLE_PACKAGE_NAME. ${OUTCOMES}`,
          body: PubSubPushBody,
          response: responses,
        },
      },
      async (request) => {
        const parser = verifiers.google;
        if (parser === undefined) throw new AppError('PROVIDER_NOT_CONFIGURED', 'Google Play notifications are not configured (GOOGLE_PUBSUB_*, GOOGLE_PACKAGE_NAME)');
        const body: unknown = request.body;
        const validationError = request.validationError;
        return handle(service, async () => {
          // The push token is checked first, so an unauthenticated sender learns nothing about the body.
          const notification = await parser.parse(request.headers.authorization, body);
          if (validationError) throw new WebhookError('INVALID_PAYLOAD', `Pub/Sub push body: ${validationError.message}`);
          return notification;
        });
      },
    );
  });
}

/** Verification failures become the documented 400s; anything else stays a 500 so the provider retries. */
async function handle(service: BillingService, verify: () => ProviderNotification | Promise<ProviderNotification>) {
  try {
    return toWebhookResponse(await service.applyNotification(await verify()));
  } catch (error) {
    if (error instanceof WebhookError) throw new AppError(error.code, error.message);
    throw error;
  }
}
