import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { accountRefusal, devicesHolding, OWNER, refusal } from '../../src/platform/access-policy.ts';
import type { AccountAction, Caller, DeviceAction, Holding, Permission, Standing } from '../../src/platform/access-policy.ts';

const USER: Caller = { administrator: false, readonly: false, deviceReadonly: false, limitCommands: false };
const ADMIN: Caller = { ...USER, administrator: true };
const NONE: Record<Permission, boolean> = { position: false, events: false, geofences: false, notifications: false, commands: false };
const PERMISSIONS = Object.keys(NONE) as Permission[];
const shareOf = (...flags: Permission[]): Holding => ({ isOwner: false, permissions: { ...NONE, ...Object.fromEntries(flags.map((flag) => [flag, true])) } });
const held = (holding: Holding | undefined): Standing => ({ exists: true, holding });
const codeOf = (caller: Partial<Caller> & Pick<Caller, 'administrator'>, standing: Standing, action: DeviceAction) => refusal(caller, standing, action)?.code;

describe('the access policy', () => {
  it('no such device is 404 for everyone, administrators too', () => {
    for (const caller of [USER, ADMIN]) for (const action of ['view', 'position', 'manage', 'send'] as const) assert.equal(codeOf(caller, { exists: false }, action), 'NOT_FOUND');
  });

  it('a device the caller holds nothing on is 403 FORBIDDEN, whatever the action; an administrator passes', () => {
    for (const action of ['view', ...PERMISSIONS, 'manage', 'listShares', 'send', 'sendSaved'] as const) {
      assert.equal(codeOf(USER, held(undefined), action), 'FORBIDDEN', action);
      assert.equal(codeOf(ADMIN, held(undefined), action), undefined, action);
    }
  });

  it('each share flag opens what it covers, and only that: else 403 PERMISSION_REQUIRED naming the flag', () => {
    for (const flag of PERMISSIONS) {
      for (const other of PERMISSIONS) {
        const refused = refusal(USER, held(shareOf(flag)), other);
        assert.equal(refused?.code, flag === other ? undefined : 'PERMISSION_REQUIRED', `${flag} → ${other}`);
        if (refused) assert.equal(refused.details?.[0]?.path, `/permissions/${other}`);
      }
    }
    assert.equal(codeOf(USER, held(shareOf()), 'view'), undefined, 'any share shows the device');
    assert.equal(codeOf(USER, held(shareOf()), 'send'), 'PERMISSION_REQUIRED');
  });

  it('only the owner or an administrator manages a device or reads its shares: a full share is 403 FORBIDDEN', () => {
    const full = shareOf(...PERMISSIONS);
    for (const action of ['manage', 'listShares'] as const) {
      assert.equal(codeOf(USER, held(full), action), 'FORBIDDEN');
      assert.equal(codeOf(USER, held(OWNER), action), undefined);
      assert.equal(codeOf(ADMIN, held(full), action), undefined);
    }
  });

  it('account flags: readonly blocks every change, deviceReadonly changes of devices and sends, limitCommands typed sends and saved-command writes', () => {
    const table: [Partial<Caller>, DeviceAction | AccountAction, string | undefined][] = [
      [{ readonly: true }, 'manage', 'USER_READONLY'],
      [{ readonly: true }, 'send', 'USER_READONLY'],
      [{ readonly: true }, 'sendSaved', 'USER_READONLY'],
      [{ readonly: true }, 'changeDevices', 'USER_READONLY'],
      [{ readonly: true }, 'write', 'USER_READONLY'],
      [{ readonly: true }, 'writeSavedCommands', 'USER_READONLY'],
      [{ readonly: true }, 'listShares', undefined],
      [{ readonly: true }, 'position', undefined],
      [{ deviceReadonly: true }, 'manage', 'USER_DEVICE_READONLY'],
      [{ deviceReadonly: true }, 'send', 'USER_DEVICE_READONLY'],
      [{ deviceReadonly: true }, 'changeDevices', 'USER_DEVICE_READONLY'],
      [{ deviceReadonly: true }, 'write', undefined],
      [{ deviceReadonly: true }, 'writeSavedCommands', undefined],
      [{ readonly: true, deviceReadonly: true }, 'manage', 'USER_READONLY'],
      [{ limitCommands: true }, 'send', 'COMMANDS_LIMITED'],
      [{ limitCommands: true }, 'sendSaved', undefined],
      [{ limitCommands: true }, 'writeSavedCommands', 'COMMANDS_LIMITED'],
      [{ limitCommands: true }, 'manage', undefined],
      [{ deviceReadonly: true, limitCommands: true }, 'send', 'USER_DEVICE_READONLY'],
    ];
    const accountActions: string[] = ['changeDevices', 'write', 'writeSavedCommands'];
    for (const [flags, action, code] of table) {
      const caller = { ...USER, ...flags };
      const answer = accountActions.includes(action) ? accountRefusal(caller, action as AccountAction)?.code : codeOf(caller, held(OWNER), action as DeviceAction);
      assert.equal(answer, code, `${JSON.stringify(flags)} ${action}`);
      const asAdministrator = accountActions.includes(action) ? accountRefusal({ ...caller, administrator: true }, action as AccountAction) : refusal({ ...caller, administrator: true }, held(OWNER), action as DeviceAction);
      assert.equal(asAdministrator, undefined, 'administrators are never read-only or limited');
    }
  });

  it('device rules come before account flags: a read-only user on a device they cannot reach is FORBIDDEN', () => {
    assert.equal(codeOf({ ...USER, readonly: true }, held(undefined), 'manage'), 'FORBIDDEN');
    assert.equal(codeOf({ ...USER, readonly: true }, held(shareOf()), 'send'), 'PERMISSION_REQUIRED');
  });

  it('a caller given without account flags is refused a change rather than let through', () => {
    assert.equal(codeOf({ administrator: false }, held(OWNER), 'manage'), 'USER_READONLY');
    assert.equal(codeOf({ administrator: false }, held(OWNER), 'position'), undefined);
  });

  it('lists in bulk: the devices holding a flag, in one pass over the grants', () => {
    const grants = [
      { deviceId: 1, ...OWNER },
      { deviceId: 2, ...shareOf('position') },
      { deviceId: 3, ...shareOf('events') },
    ];
    assert.deepEqual(devicesHolding(false, grants, 'position'), [1, 2]);
    assert.deepEqual(devicesHolding(false, grants, 'events'), [1, 3]);
    assert.deepEqual(devicesHolding(false, grants, 'commands'), [1]);
    assert.deepEqual(devicesHolding(true, grants, 'commands'), [1, 2, 3]);
  });
});
