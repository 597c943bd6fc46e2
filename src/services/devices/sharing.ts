import type { EventBus } from '../../platform/bus.ts';
import type { ServerLimits } from '../../config.ts';
import { limitReached } from '../../platform/http/errors.ts';
import { AppError } from './errors.ts';
import { requireUser } from '../auth/users/directory.ts';
import type { UserAccess, UserDirectory } from '../auth/users/directory.ts';
import { NO_PERMISSIONS } from './access.ts';
import type { DevicePermissions } from './access.ts';
import { announceAccessChange } from './caches.ts';
import type { DeviceRow, InvitationRow, ShareRow } from './repository.ts';
import type { DeviceRepositories, DevicesStore } from './store.ts';
import { isUniqueViolation, requireDevice, requireDeviceFor } from './store.ts';
import { toFlags, toPermissions } from './views.ts';
import { isoOrNull } from '../../platform/http/schemas.ts';
import type { Entitlement, PlanLimit } from '../billing/module.ts';
import type { Share } from '../../client/tracking-types.ts';

/** A share as its device's owner sees it; userId and name are null while no account has the address, and in the answer to a new share. */
export type ShareView = Share;

export interface NewShare {
  email: string;
  permissions: Partial<DevicePermissions>;
}

/**
 * Sharing a device with other users, each with their own permission flags. A share changes only
 * what its user sees. A share to an address no account has is kept pending and becomes a share
 * when an account with that address looks at its devices (acceptInvitations); the answer to a new
 * share is the same either way, so sharing never tells whether an address has an account.
 */
export class SharingService {
  private readonly store: DevicesStore;
  private readonly users: UserDirectory;
  private readonly bus: EventBus;
  private readonly limits: Pick<ServerLimits, 'sharesPerDevice'>;
  /** Billing's plans: the owner's `shares` limit; undefined where no billing module can be reached. */
  private readonly plans: Entitlement | undefined;

  constructor(store: DevicesStore, users: UserDirectory, bus: EventBus, limits: Pick<ServerLimits, 'sharesPerDevice'>, plans: Entitlement | undefined) {
    this.store = store;
    this.users = users;
    this.bus = bus;
    this.limits = limits;
    this.plans = plans;
  }

  async share(callerId: number, deviceId: number, input: NewShare): Promise<ShareView> {
    const caller = await requireUser(this.users, callerId);
    const device = await this.managedDevice(caller, deviceId);
    // Undefined: an administrator, held to no cap; `limit` undefined: no plan applies, the server cap still does.
    const plan = caller.administrator ? undefined : { limit: await this.plans?.limitOf(device.owner_id, 'shares') };
    const email = input.email.trim().toLowerCase();
    if ((await this.users.get(device.owner_id))?.email.toLowerCase() === email) throw new AppError('CANNOT_SHARE_WITH_OWNER');
    const now = Date.now();
    const grant = { ...toFlags({ ...NO_PERMISSIONS, ...input.permissions }), shared_by: caller.id, created_at: now, updated_at: now };
    const target = await this.users.findByEmail(email);
    try {
      await this.store.transaction(async (repositories) => {
        await repositories.devices.lockOwner(device.owner_id);
        if (plan) await this.assertMayShareAgain(repositories, device, plan.limit);
        if (target) {
          if (await repositories.devices.findShare(deviceId, target.id)) throw new AppError('SHARE_EXISTS');
          await repositories.devices.insertShare({ device_id: deviceId, user_id: target.id, ...grant });
        } else {
          if (await repositories.devices.findInvitation(deviceId, email)) throw new AppError('SHARE_EXISTS');
          await repositories.devices.insertInvitation({ device_id: deviceId, email, ...grant });
        }
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppError('SHARE_EXISTS');
      throw error;
    }
    if (target) await announceAccessChange(this.bus, { userIds: [target.id] });
    // Who the address belongs to, if anyone, shows in GET /{id}/shares once the share is active.
    return toPendingView({ device_id: deviceId, email, ...grant });
  }

  /** Active shares by user id, then pending ones by address. */
  async list(callerId: number, deviceId: number): Promise<ShareView[]> {
    const caller = await requireUser(this.users, callerId);
    await this.ownedDevice(caller, deviceId);
    const [rows, invitations] = await Promise.all([this.store.devices.listShares(deviceId), this.store.devices.listInvitations(deviceId)]);
    const users = await Promise.all(rows.map((row) => this.users.get(row.user_id)));
    const views: ShareView[] = [];
    rows.forEach((row, index) => {
      const user = users[index];
      // A user deleted a moment ago is dropped here; the user-deleted event removes the row.
      if (user) views.push(toShareView(row, user));
    });
    return [...views, ...invitations.map(toPendingView)];
  }

  /** Withdraws a pending share (one whose address no account had yet); an active one ends by user id. */
  async withdraw(callerId: number, deviceId: number, email: string): Promise<void> {
    const caller = await requireUser(this.users, callerId);
    await this.managedDevice(caller, deviceId);
    if (!(await this.store.devices.deleteInvitation(deviceId, email.trim().toLowerCase()))) {
      throw new AppError('NOT_FOUND', 'No pending share of this device has this address');
    }
  }

  /** Changes only the permissions named; the others keep their value. */
  async update(callerId: number, deviceId: number, userId: number, permissions: Partial<DevicePermissions>): Promise<ShareView> {
    const caller = await requireUser(this.users, callerId);
    await this.managedDevice(caller, deviceId);
    const share = await this.requireShare(deviceId, userId);
    const merged = { ...toPermissions(share), ...permissions };
    const row = await this.store.devices.updateShare(deviceId, userId, { ...toFlags(merged), updated_at: Date.now() });
    await announceAccessChange(this.bus, { userIds: [userId] });
    const user = await this.users.get(userId);
    if (!row || !user) throw new AppError('NOT_FOUND', 'The device is not shared with this user');
    return toShareView(row, user);
  }

  /** The owner or an administrator ends a share; a user may also leave a share made to them. */
  async remove(callerId: number, deviceId: number, userId: number): Promise<void> {
    const caller = await requireUser(this.users, callerId);
    const device = await requireDevice(this.store, deviceId);
    if (caller.id === userId && device.owner_id !== caller.id) {
      if (await this.deleteShare(deviceId, userId)) return;
      if (caller.administrator) throw new AppError('NOT_FOUND', 'The device is not shared with this user');
      throw new AppError('FORBIDDEN', 'You have no access to this device');
    }
    await this.managedDevice(caller, deviceId);
    if (!(await this.deleteShare(deviceId, userId))) throw new AppError('NOT_FOUND', 'The device is not shared with this user');
  }

  /**
   * Inside the transaction that shares, holding the owner's lock: 409 LIMIT_REACHED when the device is shared
   * MAX_SHARES_PER_DEVICE times already (each share adds to every position's fan-out), 402 PLAN_LIMIT_REACHED
   * when the owner's plan allows no more shares of their devices.
   */
  private async assertMayShareAgain(repositories: DeviceRepositories, device: DeviceRow, plan: PlanLimit | undefined): Promise<void> {
    const shares = await repositories.devices.countSharesOf(device.id);
    const max = this.limits.sharesPerDevice;
    if (shares >= max) throw limitReached('sharesPerDevice', max, shares, `A device may be shared with at most ${max} users (MAX_SHARES_PER_DEVICE)`);
    plan?.assert(await repositories.devices.countSharesGrantedBy(device.owner_id));
  }

  private async deleteShare(deviceId: number, userId: number): Promise<boolean> {
    const deleted = await this.store.devices.deleteShare(deviceId, userId);
    if (deleted) await announceAccessChange(this.bus, { userIds: [userId] });
    return deleted;
  }

  /** The device exists (else 404) and the caller owns it or is an administrator (else 403). */
  private ownedDevice(caller: UserAccess, deviceId: number): Promise<DeviceRow> {
    return requireDeviceFor(this.store, caller, deviceId, 'listShares');
  }

  /** As ownedDevice, and the caller's account may change devices. */
  private managedDevice(caller: UserAccess, deviceId: number): Promise<DeviceRow> {
    return requireDeviceFor(this.store, caller, deviceId, 'manage');
  }

  private async requireShare(deviceId: number, userId: number): Promise<ShareRow> {
    const share = await this.store.devices.findShare(deviceId, userId);
    if (!share) throw new AppError('NOT_FOUND', 'The device is not shared with this user');
    return share;
  }
}

/**
 * Turns the pending shares to the user's address into shares (one transaction), so that a person
 * invited before they had an account finds the devices on their first look.
 */
export async function acceptInvitations(store: DevicesStore, bus: EventBus, user: UserAccess): Promise<void> {
  const email = user.email.toLowerCase();
  if ((await store.devices.invitationsTo(email)).length === 0) return;
  const deviceIds = await store.transaction(async (repositories) => {
    const accepted: number[] = [];
    for (const invitation of await repositories.devices.invitationsTo(email)) {
      // Zero rows: a concurrent look by the same user accepted it first.
      if (!(await repositories.devices.deleteInvitation(invitation.device_id, email))) continue;
      const device = await repositories.devices.findById(invitation.device_id);
      if (!device || device.owner_id === user.id || (await repositories.devices.findShare(device.id, user.id))) continue;
      const { email: _address, ...grant } = invitation;
      await repositories.devices.insertShare({ ...grant, user_id: user.id });
      accepted.push(device.id);
    }
    return accepted;
  });
  if (deviceIds.length > 0) await announceAccessChange(bus, { userIds: [user.id], deviceIds });
}

/** A share as its answer shows it before an account is named: the new share, or a pending one. */
function toPendingView(row: InvitationRow): ShareView {
  return {
    deviceId: row.device_id,
    userId: null,
    email: row.email,
    name: null,
    permissions: toPermissions(row),
    sharedBy: row.shared_by,
    createdAt: isoOrNull(row.created_at) as string,
    updatedAt: isoOrNull(row.updated_at) as string,
  };
}

function toShareView(row: ShareRow, user: UserAccess): ShareView {
  return {
    deviceId: row.device_id,
    userId: row.user_id,
    email: user.email,
    name: user.name,
    permissions: toPermissions(row),
    sharedBy: row.shared_by,
    createdAt: isoOrNull(row.created_at) as string,
    updatedAt: isoOrNull(row.updated_at) as string,
  };
}
