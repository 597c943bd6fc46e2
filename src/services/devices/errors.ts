import { declareErrorCodes } from '../../platform/http/errors.ts';
import type { ErrorTable } from '../../platform/http/errors.ts';

/** The codes the devices module answers with (docs/errors.md, Devices). */
export const DEVICES_ERRORS = {
  DEVICE_EXISTS: [409, 'A device with this uniqueId already exists'],
  DEVICE_NOT_CONFIGURED: [400, 'The claim token is not configured for a device yet'],
  CLAIM_TOKEN_REQUIRED: [400, 'A claim token is required'],
  CLAIM_TOKEN_NOT_FOUND: [404, 'The claim token does not exist'],
  CLAIM_TOKEN_ALREADY_CLAIMED: [409, 'The claim token was claimed by another user'],
  CLAIM_TOKEN_MISMATCH: [400, 'The claim token belongs to a device with another uniqueId'],
  CLAIM_TOKEN_REVOKED: [409, 'The claim token is revoked'],
  CLAIM_TOKEN_EXISTS: [409, 'Another claim token already names this uniqueId'],
  DEVICE_ALREADY_OWNED: [409, 'A device with this uniqueId is registered already: its claim would take it from its owner; send transfer: true to allow that'],
  DEVICE_REGISTRATION_CLAIM_ONLY: [403, 'Devices are added with their claim token on this server: claim the device, or send its token as deviceToken'],
  SHARE_EXISTS: [409, 'The device is already shared with this user'],
  CANNOT_SHARE_WITH_OWNER: [400, 'The owner already has every permission'],
} as const satisfies ErrorTable;

declare module '../../platform/http/errors.ts' {
  interface ErrorTables {
    devices: typeof DEVICES_ERRORS;
  }
}

declareErrorCodes('devices', DEVICES_ERRORS);

/** The module's files raise errors through this import, so the codes above are declared before any is raised. */
export { AppError } from '../../platform/http/errors.ts';
