import { declareErrorCodes } from '../../platform/http/errors.ts';
import type { ErrorTable } from '../../platform/http/errors.ts';

/** The codes the billing module answers with (docs/errors.md, Billing). */
export const BILLING_ERRORS = {
  INVALID_SIGNATURE: [400, 'The webhook signature is invalid'],
  INVALID_PAYLOAD: [400, 'The webhook payload is invalid'],
  PROVIDER_NOT_CONFIGURED: [400, 'This billing provider is not configured'],
  PURCHASE_TOKEN_TAKEN: [409, 'The purchase token is registered to another user'],
  UNKNOWN_PLAN: [400, 'No plan has this id'],
  // raised through the entitlement interface by the module owning the resource; details name the limit or the feature
  PLAN_LIMIT_REACHED: [402, 'Your plan allows no more of these'],
  FEATURE_NOT_IN_PLAN: [402, 'Your plan does not include this feature'],
} as const satisfies ErrorTable;

declare module '../../platform/http/errors.ts' {
  interface ErrorTables {
    billing: typeof BILLING_ERRORS;
  }
}

declareErrorCodes('billing', BILLING_ERRORS);

/** The module's files raise errors through this import, so the codes above are declared before any is raised. */
export { AppError } from '../../platform/http/errors.ts';
