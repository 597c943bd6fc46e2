/**
 * The one access policy (DESIGN §1, docs/architecture.md "One access policy"): who may read or act
 * on a device, from the caller's account flags and what they hold on the device. Pure: the devices
 * module supplies the grants (one query for all the caller's devices), every module asks here, so
 * one rule answers one code everywhere (docs/errors.md, Access).
 */
import { AppError, declareErrorCodes } from './http/errors.ts';
import type { ErrorTable } from './http/errors.ts';

export const ACCESS_ERRORS = {
  PERMISSION_REQUIRED: [403, 'The share of this device does not include the permission this needs'],
  USER_READONLY: [403, 'A read-only account may look but not change anything'],
  USER_DEVICE_READONLY: [403, 'An account with read-only devices may not change devices or send them commands'],
  COMMANDS_LIMITED: [403, 'This account may send only saved commands it owns or an administrator created'],
} as const satisfies ErrorTable;

declare module './http/errors.ts' {
  interface ErrorTables {
    access: typeof ACCESS_ERRORS;
  }
}

declareErrorCodes('access', ACCESS_ERRORS);

/** The share flags of spec §2.3 (DevicePermissions). */
export type Permission = 'position' | 'events' | 'geofences' | 'notifications' | 'commands';
export type Permissions = Readonly<Record<Permission, boolean>>;

const PERMISSION_WORDS: Record<Permission, string> = {
  position: 'positions',
  events: 'events',
  geofences: 'geofences',
  notifications: 'notifications',
  commands: 'commands',
};

/** The account flags of spec §2.1 that decide access. */
export interface Caller {
  administrator: boolean;
  readonly: boolean;
  deviceReadonly: boolean;
  limitCommands: boolean;
}

/** What the caller holds on one device: owner, or a share with its flags. */
export interface Holding {
  isOwner: boolean;
  permissions: Permissions;
}

const EVERY_PERMISSION: Permissions = Object.freeze({ position: true, events: true, geofences: true, notifications: true, commands: true });

/** What the owner holds on their device. */
export const OWNER: Holding = Object.freeze({ isOwner: true, permissions: EVERY_PERMISSION });

/** One device as the caller stands to it: no such device, or a device with the caller's holding (none when neither owner nor shared). */
export type Standing = { exists: false } | { exists: true; holding: Holding | undefined };

/**
 * What a caller may try on a device:
 * - `view`: see the device itself;
 * - a Permission: read what the share flag covers (`commands`: the types and history of its commands);
 * - `manage`: change, delete or share the device, delete its positions (owner or administrator);
 * - `listShares`: read whom the device is shared with (owner or administrator, read-only accounts too);
 * - `send`: send it a command typed by the caller; `sendSaved`: send it a saved command the caller may use.
 */
export type DeviceAction = 'view' | Permission | 'manage' | 'listShares' | 'send' | 'sendSaved';

/** What a caller may do that no device decides: `changeDevices` (create, claim), `write` (e.g. their geofences), `writeSavedCommands`. */
export type AccountAction = 'changeDevices' | 'write' | 'writeSavedCommands';

const ACTION_PERMISSION: Partial<Record<DeviceAction, Permission>> = { send: 'commands', sendSaved: 'commands' };

/** Whether a holding covers `permission`; administrators hold every permission on every device. */
export function holds(administrator: boolean, holding: Holding | undefined, permission: Permission | undefined): boolean {
  if (administrator) return true;
  if (!holding) return false;
  return permission === undefined || holding.isOwner || holding.permissions[permission];
}

/**
 * The refusal for `action` on a device, or undefined when allowed. In this order: 404 NOT_FOUND (no
 * such device), 403 FORBIDDEN (neither owner nor shared; `manage` by a shared user), 403
 * PERMISSION_REQUIRED (the share lacks the flag), then the account's flags: USER_READONLY,
 * USER_DEVICE_READONLY, COMMANDS_LIMITED. Administrators pass every rule.
 */
export function refusal(caller: Pick<Caller, 'administrator'> & Partial<Caller>, standing: Standing, action: DeviceAction): AppError | undefined {
  if (!standing.exists) return new AppError('NOT_FOUND', 'No such device');
  if (caller.administrator) return undefined;
  const { holding } = standing;
  if (action === 'manage' || action === 'listShares') {
    if (!holding?.isOwner) return new AppError('FORBIDDEN', 'Only the owner of the device or an administrator may do this');
    return action === 'manage' ? accountRefusal(asCaller(caller), 'changeDevices') : undefined;
  }
  if (!holding) return new AppError('FORBIDDEN', 'You may not reach this device');
  const permission = ACTION_PERMISSION[action] ?? (action === 'view' ? undefined : (action as Permission));
  if (!holds(false, holding, permission)) {
    const word = PERMISSION_WORDS[permission as Permission];
    return new AppError('PERMISSION_REQUIRED', `The share of this device does not include ${word}`, {
      details: [{ path: `/permissions/${permission}`, message: `the share does not include ${word}` }],
    });
  }
  if (action !== 'send' && action !== 'sendSaved') return undefined;
  const flags = asCaller(caller);
  const account = accountRefusal(flags, 'changeDevices');
  if (account) return account;
  if (action === 'send' && flags.limitCommands) return new AppError('COMMANDS_LIMITED');
  return undefined;
}

/** The refusal for an action no device decides, or undefined when allowed. */
export function accountRefusal(caller: Caller, action: AccountAction): AppError | undefined {
  if (caller.administrator) return undefined;
  if (caller.readonly) return new AppError('USER_READONLY');
  if (action === 'changeDevices' && caller.deviceReadonly) return new AppError('USER_DEVICE_READONLY');
  if (action === 'writeSavedCommands' && caller.limitCommands) return new AppError('COMMANDS_LIMITED');
  return undefined;
}

/** Throws the refusal of an action no device decides (accountRefusal). */
export function assertAccountMay(caller: Caller, action: AccountAction): void {
  const refused = accountRefusal(caller, action);
  if (refused) throw refused;
}

/**
 * The devices among `holdings` on which the caller holds `permission`, in their order: a list's
 * devices in one pass over the grants read once, never a query per device.
 */
export function devicesHolding<T extends Holding & { deviceId: number }>(administrator: boolean, holdings: readonly T[], permission: Permission): number[] {
  return holdings.filter((holding) => holds(administrator, holding, permission)).map((holding) => holding.deviceId);
}

/** The account flags write actions need: a caller given without them (a reader) is refused as read-only rather than let through. */
function asCaller(caller: Pick<Caller, 'administrator'> & Partial<Caller>): Caller {
  return { administrator: caller.administrator, readonly: caller.readonly ?? true, deviceReadonly: caller.deviceReadonly ?? true, limitCommands: caller.limitCommands ?? true };
}
