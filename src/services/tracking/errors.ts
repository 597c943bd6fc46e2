import { declareErrorCodes } from '../../platform/http/errors.ts';
import type { ErrorTable } from '../../platform/http/errors.ts';

/** The codes the tracking module answers with (docs/errors.md, Tracking). */
export const TRACKING_ERRORS = {
  INVALID_AREA: [400, 'The geofence area is invalid'],
  RANGE_TOO_LARGE: [400, 'The range holds too many positions; narrow it'],
  WEBSOCKET_REQUIRED: [426, 'This endpoint speaks WebSocket only: send an Upgrade: websocket request'],
  UNSUPPORTED_COMMAND: [400, "The device's protocol cannot send this command type"],
  INVALID_COMMAND_ATTRIBUTES: [400, 'The attributes do not fit the command type'],
  SAVED_COMMANDS_LIMIT_REACHED: [409, 'The account holds the most saved commands it may'],
  REPORT_WINDOW_TOO_LONG: [400, 'The report window is longer than REPORT_MAX_DAYS; narrow it'],
  REPORT_TOO_MANY_DEVICES: [400, 'The report covers more devices than REPORT_MAX_DEVICES; name fewer devices'],
  COMMAND_QUEUE_FULL: [409, 'The device has the most commands waiting for it that it may: wait until it connects or they expire'],
} as const satisfies ErrorTable;

declare module '../../platform/http/errors.ts' {
  interface ErrorTables {
    tracking: typeof TRACKING_ERRORS;
  }
}

declareErrorCodes('tracking', TRACKING_ERRORS);

/** The module's files raise errors through this import, so the codes above are declared before any is raised. */
export { AppError } from '../../platform/http/errors.ts';
