import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { createWebhookVerifiers } from '../../../src/services/billing/webhooks.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { postApple, postGoogle, postStripe, pushEnvelope, startBillingTestProviders, stripeEvent, stripeSubscription } from './support/providers.ts';
import type { BillingTestProviders } from './support/providers.ts';
import { countRows } from './support/state.ts';

const log = pino({ level: 'silent' });

describe('billing webhook configuration', () => {
  let providers: BillingTestProviders;
  before(async () => {
    providers = await startBillingTestProviders();
  });
  after(() => providers?.close());

  const verifiers = (env: Record<string, string>) => createWebhookVerifiers(loadConfig({ DATA_DIR: '/tmp/unused', ...env }), log);

  it('configures nothing by default and every provider from the full settings', () => {
    const none = verifiers({});
    assert.equal(none.stripeSecret, undefined);
    assert.equal(none.apple, undefined);
    assert.equal(none.google, undefined);
    const all = verifiers(providers.env);
    assert.equal(all.stripeSecret, providers.env['STRIPE_WEBHOOK_SECRET']);
    assert.ok(all.apple);
    assert.ok(all.google);
  });

  it('refuses to start with a half-configured provider, naming the missing variable', () => {
    const cases: [Record<string, string>, string][] = [
      [{ APPLE_ROOT_CERTS: providers.env['APPLE_ROOT_CERTS'] as string, APPLE_ENVIRONMENT: 'Sandbox' }, 'APPLE_BUNDLE_ID'],
      [{ APPLE_BUNDLE_ID: 'com.trackstack.app' }, 'APPLE_ROOT_CERTS'],
      [{ APPLE_ROOT_CERTS: providers.env['APPLE_ROOT_CERTS'] as string, APPLE_BUNDLE_ID: 'com.trackstack.app' }, 'APPLE_APP_APPLE_ID'],
      [{ APPLE_ROOT_CERTS: '/etc/hostname', APPLE_BUNDLE_ID: 'com.trackstack.app', APPLE_ENVIRONMENT: 'Sandbox' }, 'APPLE_ROOT_CERTS'],
      [{ GOOGLE_PUBSUB_AUDIENCE: 'https://example.test/push' }, 'GOOGLE_PUBSUB_SERVICE_ACCOUNT'],
      [{ GOOGLE_PUBSUB_AUDIENCE: 'https://example.test/push', GOOGLE_PUBSUB_SERVICE_ACCOUNT: 'push@example.iam.gserviceaccount.com' }, 'GOOGLE_PACKAGE_NAME'],
    ];
    for (const [env, variable] of cases) {
      assert.throws(() => verifiers(env), (error: unknown) => error instanceof ConfigError && error.variable === variable, variable);
    }
  });

  it('accepts Production with an app Apple id, and online checks on by default', () => {
    const config = loadConfig({ DATA_DIR: '/tmp/unused', APPLE_ROOT_CERTS: providers.env['APPLE_ROOT_CERTS'] as string, APPLE_BUNDLE_ID: 'com.trackstack.app', APPLE_APP_APPLE_ID: '1234567890' });
    assert.equal(config.apple.onlineChecks, true);
    assert.ok(createWebhookVerifiers(config, log).apple);
    assert.equal(loadConfig({ APPLE_ONLINE_CHECKS: 'off' }).apple.onlineChecks, false);
  });
});

describeEachEngine('billing: webhooks of providers that are not configured', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine);
  });
  after(() => server?.dispose());

  const deliveries = {
    Stripe: () => postStripe(server.app, stripeEvent('customer.subscription.created', stripeSubscription({ id: 'sub_unconfigured', userId: 1 }))),
    'App Store': () => postApple(server.app, { signedPayload: 'a.b.c' }),
    'Google Play': () => postGoogle(server.app, pushEnvelope({ testNotification: {} }), 'Bearer x'),
  };
  for (const [provider, deliver] of Object.entries(deliveries)) {
    it(`${provider}: answers 400 PROVIDER_NOT_CONFIGURED and stores nothing`, async () => {
      const response = await deliver();
      assert.equal(response.statusCode, 400);
      assert.equal(response.json().code, 'PROVIDER_NOT_CONFIGURED');
      assert.equal(await countRows(server.database, 'billing_webhook_events'), 0);
    });
  }
});
