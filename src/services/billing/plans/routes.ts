import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { requireIdentity } from '../../../platform/http/identity.ts';
import { errorResponses, isoOrNull } from '../../../platform/http/schemas.ts';
import type { Entitlement } from '../entitlement.ts';
import { EntitlementAnswer, PlanOverrideRequest, PlanOverrideResponse, UserIdParams, toEntitlementAnswer, toPlanView } from '../schemas.ts';
import type { BillingService } from '../service.ts';

export interface PlanRouteDeps {
  service: BillingService;
  entitlement: Entitlement;
}

/** Administrators' plan overrides, and the internal route behind the remote entitlement of split mode. */
export function registerPlanRoutes(app: HttpApp, { service, entitlement }: PlanRouteDeps): void {
  app.put(
    '/api/subscriptions/:user_id/plan',
    {
      schema: {
        tags: ['billing'],
        summary: 'Put a user on a plan whatever their subscriptions say, for good or until `until` (administrators)',
        description: '400 UNKNOWN_PLAN for an id PLANS_FILE does not define; 400 VALIDATION_FAILED for an `until` not in the future; 404 for an unknown user.',
        params: UserIdParams,
        body: PlanOverrideRequest,
        response: { 200: PlanOverrideResponse, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const userId = request.params.user_id;
      const { planId, until } = request.body;
      const untilMs = until === undefined || until === null ? null : Date.parse(until);
      await service.setPlanOverride(requireIdentity(request).userId, userId, planId, untilMs);
      const grant = await entitlement.planOf(userId);
      return { user_id: userId, plan_id: planId, until: isoOrNull(untilMs), plan: toPlanView(grant.plan) };
    },
  );

  app.delete(
    '/api/subscriptions/:user_id/plan',
    {
      schema: {
        tags: ['billing'],
        summary: 'End a user\'s plan override: their subscriptions decide again (administrators)',
        description: '404 when the user has no override.',
        params: UserIdParams,
        response: { 204: Type.Null(), ...errorResponses(401, 403, 404) },
      },
    },
    async (request, reply) => {
      await service.clearPlanOverride(request.params.user_id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/subscriptions/internal/entitlement/:user_id',
    {
      schema: {
        tags: ['billing'],
        summary: 'A user\'s subscription check and plan, with the instant they may change by time alone (services only)',
        params: UserIdParams,
        response: { 200: EntitlementAnswer },
      },
    },
    async (request) => {
      const userId = request.params.user_id;
      const [check, grant] = await Promise.all([entitlement.check(userId), entitlement.planOf(userId)]);
      return toEntitlementAnswer(check, grant);
    },
  );
}
