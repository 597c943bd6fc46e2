import { isoOrNull } from '../../../platform/http/schemas.ts';
import { AppError } from '../errors.ts';
import type { UserRow } from './repository.ts';
import type { User } from '../../../client/types.ts';

/** The User resource of spec §2.1. */
export type UserView = User;

export function storedAttributes(row: UserRow): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(row.attributes);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The flags that govern what the account may do, as both the User resource and other modules see them. */
export function accessFlags(row: UserRow): Pick<User, 'administrator' | 'disabled' | 'readonly' | 'deviceReadonly' | 'limitCommands'> {
  return {
    administrator: row.administrator === 1,
    disabled: row.disabled === 1,
    readonly: row.readonly === 1,
    deviceReadonly: row.device_readonly === 1,
    limitCommands: row.limit_commands === 1,
  };
}

/** `emailVerified` and `twoFactorEnabled` are computed into attributes for clients; they are never stored there. */
export function toUserView(row: UserRow, state: { twoFactorEnabled: boolean }): UserView {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    phone: row.phone,
    ...accessFlags(row),
    expirationTime: isoOrNull(row.expiration_time),
    attributes: { ...storedAttributes(row), emailVerified: row.email_verified_at !== null, twoFactorEnabled: state.twoFactorEnabled },
  };
}

/** Throws the 403 that keeps this account from signing in now, if any (checked only after a correct password). */
export function assertMaySignIn(row: UserRow, options: { requireVerified: boolean }): void {
  if (row.disabled === 1) throw new AppError('ACCOUNT_DISABLED');
  if (row.expiration_time !== null && row.expiration_time <= Date.now()) throw new AppError('ACCOUNT_EXPIRED');
  if (options.requireVerified && row.email_verified_at === null) throw new AppError('EMAIL_NOT_VERIFIED');
}

/** Whether the account may use its tokens now: not disabled, not expired. */
export function isActive(row: Pick<UserRow, 'disabled' | 'expiration_time'>): boolean {
  return row.disabled === 0 && (row.expiration_time === null || row.expiration_time > Date.now());
}
