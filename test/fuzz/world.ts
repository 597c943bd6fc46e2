// The fixtures the fuzzed requests aim at: an owner with a device (shared with the other user), a geofence,
// positions, an event and subscriptions at all three providers; another user with a device of their own; an
// administrator with a claim token. A request that succeeds may delete or disable any of it, so `intact()` checks
// and `repair()` mends it.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { TEST_INTERNAL_TOKEN } from '../support/server.ts';
import type { TestLogin, TestServer } from '../support/server.ts';
import { postStripe, stripeEvent, stripeSubscription } from '../services/billing/support/providers.ts';
import type { BillingTestProviders } from '../services/billing/support/providers.ts';
import type { Caller, Credential } from './requests.ts';
import type { Ref, RefName } from './values.ts';
import { signDelivery } from './webhooks.ts';
import type { SignedWebhookDelivery } from './webhooks.ts';

const OWNER_PASSWORD = 'fuzz-owner-passphrase-1';
const T0 = Date.parse('2025-03-01T00:00:00.000Z');

type Login = TestLogin & { email: string };

export class FuzzWorld {
  readonly #server: TestServer;
  readonly #providers: BillingTestProviders;
  #generation = 0;
  #logins: Record<'owner' | 'other' | 'admin', Login> | undefined;
  #refs = new Map<RefName, string | number>();
  #appAccountToken = '';

  constructor(server: TestServer, providers: BillingTestProviders) {
    this.#server = server;
    this.#providers = providers;
  }

  /** A fresh set of fixtures under new accounts; the old ones stay in the database. */
  async build(): Promise<void> {
    this.#generation += 1;
    const tag = `g${this.#generation}-${randomUUID().slice(0, 8)}`;
    const login = async (role: string, administrator = false, password?: string): Promise<Login> => {
      const email = `fuzz-${role}-${tag}@example.com`;
      // An account with a password, for the routes that ask for the current one.
      if (password !== undefined) await this.#server.auth?.api.accounts.create({ email, password, administrator, emailVerified: true });
      return { ...(await this.#server.login({ email, administrator })), email };
    };
    const owner = await login('owner', false, OWNER_PASSWORD);
    const other = await login('other');
    const admin = await login('admin', true);
    this.#logins = { owner, other, admin };

    const ownerDevice = await this.#create(owner, '/api/devices', { name: 'Owner tracker', uniqueId: `fuzz-owner-${tag}` });
    const otherDevice = await this.#create(other, '/api/devices', { name: 'Other tracker', uniqueId: `fuzz-other-${tag}` });
    const share = await this.#inject(owner, 'POST', `/api/devices/${ownerDevice}/shares`, { email: other.email, permissions: { position: true, events: true } });
    assert.equal(share.statusCode, 201, share.body);
    const geofence = await this.#create(owner, '/api/geofences', { name: 'Depot', area: 'CIRCLE (52.5 13.4, 500)' });
    const claimUniqueId = `fuzz-claim-${tag}`;
    const claim = await this.#inject(admin, 'POST', '/api/devices/claim-tokens', { modelCode: 'FZ-1', uniqueId: claimUniqueId });
    assert.equal(claim.statusCode, 201, claim.body);

    const tracking = this.#server.tracking?.api;
    assert.ok(tracking, 'the tracking module runs');
    const [position] = await tracking.storePositions([
      { deviceId: ownerDevice, protocol: 'osmand', serverTime: T0 + 500, deviceTime: T0, fixTime: T0, valid: true, latitude: 52.5, longitude: 13.4 },
    ]);
    const [event] = await tracking.storeEvents([{ type: 'geofenceEnter', eventTime: T0, deviceId: ownerDevice, positionId: position, geofenceId: geofence }]);

    const stripeId = `sub_fuzz_${tag}`;
    const stripe = await postStripe(this.#server.app, stripeEvent('customer.subscription.created', stripeSubscription({ id: stripeId, userId: owner.userId })));
    assert.equal(stripe.json().status, 'processed', stripe.body);
    const purchaseToken = `fuzz-purchase-${tag}`;
    const purchase = await this.#inject(owner, 'POST', '/api/subscriptions/google/purchases', { purchaseToken, productId: 'pro_monthly' });
    assert.equal(purchase.statusCode, 201, purchase.body);
    this.#appAccountToken = (await this.#inject(owner, 'GET', `/api/subscriptions/${owner.userId}`)).json().app_account_token;

    const values: [RefName, string | number | undefined][] = [
      ['owner.id', owner.userId], ['other.id', other.userId], ['admin.id', admin.userId],
      ['owner.email', owner.email], ['other.email', other.email], ['admin.email', admin.email], ['owner.password', OWNER_PASSWORD],
      ['owner.device', ownerDevice], ['other.device', otherDevice],
      ['owner.device.uniqueId', `fuzz-owner-${tag}`], ['other.device.uniqueId', `fuzz-other-${tag}`],
      ['owner.geofence', geofence], ['owner.position', position], ['owner.event', event],
      ['claim.token', claim.json().token], ['claim.uniqueId', claimUniqueId],
      ['stripe.subscription', stripeId], ['apple.transaction', `7${String(this.#generation).padStart(15, '0')}`], ['google.purchaseToken', purchaseToken],
    ];
    this.#refs = new Map(values.map(([name, value]) => {
      assert.ok(value !== undefined, `fixture ${name}`);
      return [name, value];
    }));
  }

  /**
   * Makes the fixtures whole again after a request that succeeded: a signed-out account gets a new session; anything
   * else broken (an account deleted, disabled or promoted, the device, share, geofence or claim token gone) a fresh set.
   */
  async repair(): Promise<void> {
    if (!(await this.#intact())) await this.build();
  }

  /** Reads that must keep answering whatever a request stored: the owner's own data and the administrator's lists of everyone's. */
  async brokenReads(): Promise<string[]> {
    const { owner, admin } = this.#requireLogins();
    const device = this.ref('owner.device');
    const reads: [Login, string][] = [
      [owner, '/api/auth/profile'],
      [owner, '/api/devices'],
      [owner, `/api/devices/${device}`],
      [owner, `/api/devices/${device}/shares`],
      [owner, '/api/geofences'],
      [owner, `/api/positions?deviceId=${device}`],
      [owner, `/api/events?deviceId=${device}`],
      [owner, `/api/subscriptions/${owner.userId}`],
      [owner, `/api/subscriptions/check/${owner.userId}`],
      [admin, '/api/auth/users'],
      [admin, '/api/devices'],
      [admin, '/api/geofences?all=true'],
      [admin, '/api/devices/claim-tokens'],
      [admin, `/api/subscriptions/by-provider/stripe/${this.ref('stripe.subscription')}`],
      [admin, `/api/subscriptions/by-provider/google/${this.ref('google.purchaseToken')}`],
    ];
    const broken: string[] = [];
    for (const [login, url] of reads) {
      const response = await this.#inject(login, 'GET', url);
      if (response.statusCode >= 500) broken.push(`GET ${url} answered ${response.statusCode}`);
    }
    return broken;
  }

  async #intact(): Promise<boolean> {
    const logins = this.#requireLogins();
    for (const [role, administrator] of [['owner', false], ['other', false], ['admin', true]] as const) {
      let profile = await this.#inject(logins[role], 'GET', '/api/auth/profile');
      if (profile.statusCode === 401) {
        logins[role] = { ...(await this.#server.login({ email: logins[role].email })), email: logins[role].email };
        profile = await this.#inject(logins[role], 'GET', '/api/auth/profile');
      }
      if (profile.statusCode !== 200) return false;
      const user = profile.json();
      if (user.administrator !== administrator || user.disabled || user.readonly || user.deviceReadonly || user.expirationTime !== null) return false;
    }
    const { owner, other, admin } = logins;
    const checks: [Login, string][] = [
      [owner, `/api/devices/${this.ref('owner.device')}`],
      [other, `/api/devices/${this.ref('owner.device')}`],
      [other, `/api/devices/${this.ref('other.device')}`],
      [owner, `/api/geofences/${this.ref('owner.geofence')}`],
      [admin, `/api/devices/claim-tokens/${this.ref('claim.token')}`],
    ];
    for (const [login, url] of checks) {
      if ((await this.#inject(login, 'GET', url)).statusCode !== 200) return false;
    }
    return true;
  }

  ref(name: RefName): string | number {
    const value = this.#refs.get(name);
    if (value === undefined) throw new Error(`no fixture ${name}`);
    return value;
  }

  readonly resolve = (ref: Ref): string | number => this.ref(ref.name);

  credentialHeaders(credential: Credential): Record<string, string> {
    switch (credential.kind) {
      case 'caller':
        return this.#callerHeaders(credential.caller);
      case 'tampered': {
        const token = this.#requireLogins()[credential.caller].token;
        const last = token.at(-2) === 'A' ? 'B' : 'A';
        return { authorization: `Bearer ${token.slice(0, -2)}${last}${token.at(-1)}` };
      }
      case 'header':
        return { [credential.name]: credential.value };
    }
  }

  sign(delivery: SignedWebhookDelivery): Promise<{ headers: Record<string, string>; payload: string }> {
    return signDelivery(delivery, {
      providers: this.#providers,
      ownerId: Number(this.ref('owner.id')),
      appAccountToken: this.#appAccountToken,
      stripeSubscription: String(this.ref('stripe.subscription')),
      appleTransaction: String(this.ref('apple.transaction')),
      googlePurchaseToken: String(this.ref('google.purchaseToken')),
    });
  }

  #callerHeaders(caller: Caller): Record<string, string> {
    if (caller === 'anonymous') return {};
    if (caller === 'service') return { 'x-internal-token': TEST_INTERNAL_TOKEN };
    return this.#requireLogins()[caller].authorization;
  }

  #requireLogins() {
    if (!this.#logins) throw new Error('the fixtures are not built');
    return this.#logins;
  }

  #inject(login: Login, method: 'GET' | 'POST', url: string, payload?: object) {
    return this.#server.app.inject({ method, url, headers: login.authorization, ...(payload === undefined ? {} : { payload }) });
  }

  async #create(login: Login, url: string, payload: object): Promise<number> {
    const response = await this.#inject(login, 'POST', url, payload);
    assert.equal(response.statusCode, 201, `${url}: ${response.body}`);
    return response.json().id;
  }
}
