import { declareErrorCodes } from '../../platform/http/errors.ts';
import type { ErrorTable } from '../../platform/http/errors.ts';

/** The codes the notifications module answers with (docs/errors.md, Notifications). */
export const NOTIFICATIONS_ERRORS = {
  CHANNEL_NOT_AVAILABLE: [400, 'This server has no such channel configured'],
  INVALID_WEBHOOK_URL: [400, 'The webhook URL is not allowed'],
  WEBHOOK_URL_REQUIRED: [400, 'A rule with the webhook channel needs attributes.webhookUrl'],
  DEVICES_REQUIRED: [400, 'A rule without always: true needs deviceIds'],
  INVALID_ALARMS: [400, 'attributes.alarms must be comma-separated alarm names'],
  UNKNOWN_CALENDAR: [400, 'No calendar has this id: this server has no calendars'],
  INVALID_PUSH_TARGET: [400, 'The push target is invalid for its kind'],
  DELIVERY_NOT_FAILED: [409, 'Only a failed delivery can be retried'],
} as const satisfies ErrorTable;

declare module '../../platform/http/errors.ts' {
  interface ErrorTables {
    notifications: typeof NOTIFICATIONS_ERRORS;
  }
}

declareErrorCodes('notifications', NOTIFICATIONS_ERRORS);

/** The module's files raise errors through this import, so the codes above are declared before any is raised. */
export { AppError } from '../../platform/http/errors.ts';
