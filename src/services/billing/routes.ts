import type { FastifyRequest } from 'fastify';
import type { HttpApp } from '../../platform/http/app.ts';
import { AppError } from './errors.ts';
import { requireIdentity } from '../../platform/http/identity.ts';
import { isEntitled } from './subscription-check.ts';
import type { Entitlement } from './entitlement.ts';
import type { UsageRegistry } from './plans/usage.ts';
import {
  ByProviderParams,
  CheckSubscriptionResponse,
  GetSubscriptionsResponse,
  GooglePurchaseRequest,
  GooglePurchaseResponse,
  Subscription,
  UserIdParams,
  toCheckFields,
  toPlanView,
  toSubscription,
} from './schemas.ts';
import { toEntitlementRecord } from './service.ts';
import type { BillingService } from './service.ts';

export interface SubscriptionRouteDeps {
  service: BillingService;
  entitlement: Entitlement;
  usage: UsageRegistry;
}

const QUERY_AUTH = 'The bearer\'s own user id, any user id for administrators, or a service call with X-Internal-Token.';

export function registerSubscriptionRoutes(app: HttpApp, deps: SubscriptionRouteDeps): void {
  const { service, entitlement, usage } = deps;
  const planAndUsage = async (userId: number) => {
    const [grant, counts] = await Promise.all([entitlement.planOf(userId), usage.of(userId)]);
    return { plan: toPlanView(grant.plan), usage: counts };
  };

  app.get(
    '/api/subscriptions/:user_id',
    {
      schema: {
        tags: ['billing'],
        summary: 'A user\'s subscriptions, one per provider, with the app_account_token for App Store purchases',
        description: `${QUERY_AUTH} 404 when the user does not exist. \`plan\` is the plan that applies now, \`usage\` what the user holds (docs/plans.md).`,
        params: UserIdParams,
        response: { 200: GetSubscriptionsResponse },
      },
    },
    async (request) => {
      const userId = request.params.user_id;
      const caller = await authorizeUserQuery(request, userId, service);
      // The bearer's own account exists; anyone else's is checked before a customer row is created for it.
      if (caller !== 'self' && !(await service.userExists(userId))) throw new AppError('NOT_FOUND', 'User not found');
      const { appAccountToken, subscriptions } = await service.subscriptionsOf(userId);
      const now = Date.now();
      return {
        user_id: userId,
        app_account_token: appAccountToken,
        subscriptions: subscriptions.map(toSubscription),
        has_active_subscription: subscriptions.some((row) => isEntitled(toEntitlementRecord(row), now)),
        ...(await planAndUsage(userId)),
      };
    },
  );

  app.get(
    '/api/subscriptions/check/:user_id',
    {
      schema: {
        tags: ['billing'],
        summary: 'Whether a user is subscribed (fast, cached; meant for calls between services)',
        description: `${QUERY_AUTH} A user without records, or unknown, answers is_subscribed false, on the default plan.`,
        params: UserIdParams,
        response: { 200: CheckSubscriptionResponse },
      },
    },
    async (request) => {
      const userId = request.params.user_id;
      await authorizeUserQuery(request, userId, service);
      const [check, extra] = await Promise.all([entitlement.check(userId), planAndUsage(userId)]);
      return { ...toCheckFields(check), ...extra };
    },
  );

  app.get(
    '/api/subscriptions/by-provider/:provider/:subscription_id',
    {
      schema: {
        tags: ['billing'],
        summary: 'The record following a provider\'s subscription (Stripe subscription id, Apple originalTransactionId, Google purchaseToken)',
        description: 'Administrators and services (X-Internal-Token) only. 404 when no record follows that subscription.',
        params: ByProviderParams,
        response: { 200: Subscription },
      },
    },
    async (request) => {
      const row = await service.findByProviderSubscription(request.params.provider, request.params.subscription_id);
      if (!row) throw new AppError('NOT_FOUND', 'Subscription not found');
      return toSubscription(row);
    },
  );

  app.post(
    '/api/subscriptions/google/purchases',
    {
      schema: {
        tags: ['billing'],
        summary: 'Register a Google Play purchase token for the bearer, so Google\'s notifications about it reach this user',
        description:
          '201 when linked now (notifications that arrived earlier are applied at once), 200 when the bearer had registered it before, ' +
          '409 PURCHASE_TOKEN_TAKEN when another user did.',
        body: GooglePurchaseRequest,
        response: { 200: GooglePurchaseResponse, 201: GooglePurchaseResponse },
      },
    },
    async (request, reply) => {
      const identity = requireIdentity(request);
      const { purchaseToken, productId } = request.body;
      const registration = await service.registerGooglePurchase(identity.userId, purchaseToken, productId);
      reply.code(registration.created ? 201 : 200);
      return {
        user_id: identity.userId,
        product_id: registration.productId,
        subscription: registration.subscription ? toSubscription(registration.subscription) : null,
      };
    },
  );
}

/** DESIGN §5.5: the user themself, an administrator, or a service; 403 for another user's id. */
async function authorizeUserQuery(request: FastifyRequest, userId: number, service: BillingService): Promise<'self' | 'other'> {
  if (request.fromService) return 'other';
  const identity = requireIdentity(request);
  if (identity.userId === userId) return 'self';
  if (await service.isAdministrator(identity.userId)) return 'other';
  throw new AppError('FORBIDDEN', 'Only your own subscriptions are visible to you');
}
