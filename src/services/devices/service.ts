import type { Insertable, Updateable } from 'kysely';
import type { EventBus } from '../../platform/bus.ts';
import type { DeviceRegistration } from './settings.ts';
import type { FactRecorder } from '../../platform/outbox/outbox.ts';
import { limitReached } from '../../platform/http/errors.ts';
import { AppError } from './errors.ts';
import { requireUser } from '../auth/users/directory.ts';
import type { UserAccess, UserDirectory } from '../auth/users/directory.ts';
import { assertAccountMay } from '../../platform/access-policy.ts';
import { ALL_PERMISSIONS } from './access.ts';
import type { DeviceAccess, DeviceRecord, DeviceStatusChange, DeviceStatusUpdate, DeviceView } from './access.ts';
import { announceAccessChange } from './caches.ts';
import type { DeviceCaches, VisibleDevices } from './caches.ts';
import { normaliseClaimToken } from './claim-tokens/code.ts';
import type { ClaimTokenRow } from './claim-tokens/repository.ts';
import type { DeviceDeleted, DevicesUpdated } from './events.ts';
import type { DeviceWithToken, StatusChangeRow, VisibleDeviceRow } from './repository.ts';
import type { DeviceRepositories, DevicesStore } from './store.ts';
import { isUniqueViolation, requireDevice, requireDeviceFor } from './store.ts';
import type { DevicesTable } from './tables.ts';
import type { Entitlement, PlanLimit } from '../billing/module.ts';
import { acceptInvitations } from './sharing.ts';
import { ADMINISTRATOR_VIEWPOINT, OWNER_VIEWPOINT, toPermissions, toRecord, toView } from './views.ts';
import type { Viewpoint } from './views.ts';

/** Concurrent claims of one token settle within a retry or two; more means something keeps changing it. */
const CLAIM_ATTEMPTS = 3;

/** How the operator lets users add devices (config: DEVICE_REGISTRATION, MAX_DEVICES_PER_USER) and the plans billing enforces. */
export interface DevicePolicy {
  registration: DeviceRegistration;
  devicesPerUser: number;
  /** Billing's plans (docs/plans.md); undefined where no billing module can be reached: no plan limits. */
  plans: Entitlement | undefined;
}

export interface DeviceInput {
  name: string;
  uniqueId: string;
  phone?: string | null;
  model?: string | null;
  contact?: string | null;
  category?: string | null;
  groupId?: number | null;
  attributes?: Record<string, unknown>;
  deviceToken?: string;
}

export interface DeviceChanges {
  name?: string;
  phone?: string | null;
  model?: string | null;
  contact?: string | null;
  category?: string | null;
  groupId?: number | null;
  disabled?: boolean;
  attributes?: Record<string, unknown>;
}

export interface DeviceListQuery {
  userId?: number;
  ids?: number[];
  uniqueIds?: string[];
}

export interface ClaimResult {
  success: true;
  alreadyClaimed: boolean;
  device?: DeviceView;
}

/** Devices: CRUD, claiming, the access interface other modules use, and cleanup when a user goes. */
export class DeviceService {
  private readonly store: DevicesStore;
  private readonly users: UserDirectory;
  private readonly bus: EventBus;
  private readonly caches: DeviceCaches;
  private readonly facts: FactRecorder;
  private readonly policy: DevicePolicy;

  constructor(store: DevicesStore, users: UserDirectory, bus: EventBus, caches: DeviceCaches, facts: FactRecorder, policy: DevicePolicy) {
    this.store = store;
    this.users = users;
    this.bus = bus;
    this.caches = caches;
    this.facts = facts;
    this.policy = policy;
  }

  /** Owned and shared devices of the caller, or (administrators only) of `userId`, as that user sees them. */
  async list(callerId: number, query: DeviceListQuery): Promise<DeviceView[]> {
    const caller = await requireUser(this.users, callerId);
    let subject: UserAccess = caller;
    if (query.userId !== undefined && query.userId !== caller.id) {
      if (!caller.administrator) throw new AppError('FORBIDDEN', 'Only administrators may list the devices of another user');
      const target = await this.users.get(query.userId);
      if (!target) return [];
      subject = target;
    }
    // An empty filter list matches nothing, never everything.
    const ids = query.ids && new Set(query.ids);
    const uniqueIds = query.uniqueIds && new Set(query.uniqueIds);
    const views: DeviceView[] = [];
    for (const row of (await this.visibleTo(subject)).values()) {
      if ((ids && !ids.has(row.id)) || (uniqueIds && !uniqueIds.has(row.unique_id))) continue;
      views.push(toView(row, visibleViewpoint(row, subject)));
    }
    return views;
  }

  async get(callerId: number, deviceId: number): Promise<DeviceView> {
    const caller = await requireUser(this.users, callerId);
    const visible = (await this.visibleTo(caller)).get(deviceId);
    if (visible) return toView(visible, visibleViewpoint(visible, caller));
    // Neither owned nor shared: an administrator sees it all the same, anyone else learns 403 or 404.
    const row = await requireDevice(this.store, deviceId);
    return toView(row, await this.viewpointOf(caller, row));
  }

  /**
   * The user's owned and shared devices, from the cache (see DeviceCaches for when it is dropped).
   * Reading them afresh first accepts the shares made to the user's address before the account existed.
   */
  private visibleTo(user: UserAccess): Promise<VisibleDevices> {
    const userId = user.id;
    return this.caches.lists.get(userId, async () => {
      await acceptInvitations(this.store, this.bus, user);
      const rows = (await this.store.devices.listVisible(userId)).sort((a, b) => a.id - b.id);
      const devices: VisibleDevices = new Map();
      // Should a device be both owned and shared, it shows as owned.
      for (const row of rows) if (!devices.has(row.id) || row.owner_id === userId) devices.set(row.id, row);
      return devices;
    });
  }

  async create(callerId: number, input: DeviceInput): Promise<DeviceView> {
    const caller = await requireUser(this.users, callerId);
    assertAccountMay(caller, 'changeDevices');
    // Anyone could otherwise register a tracker's IMEI first and receive its positions.
    if (this.policy.registration === 'claim-only' && input.deviceToken === undefined && !caller.administrator) {
      throw new AppError('DEVICE_REGISTRATION_CLAIM_ONLY');
    }
    const allowance = await this.deviceAllowance(caller);
    const now = Date.now();
    const values = {
      name: input.name,
      unique_id: input.uniqueId,
      status: 'offline',
      phone: input.phone ?? null,
      model: input.model ?? null,
      contact: input.contact ?? null,
      category: input.category ?? null,
      disabled: 0,
      group_id: input.groupId ?? null,
      attributes: JSON.stringify(input.attributes ?? {}),
      owner_id: caller.id,
      created_at: now,
      updated_at: now,
    };
    let deviceId: number;
    try {
      if (input.deviceToken !== undefined) {
        deviceId = await this.createClaimed(caller, input.deviceToken, values, allowance, now);
      } else {
        deviceId = await this.store.transaction(async (repositories) => {
          await assertMayOwnAnother(repositories, caller.id, allowance);
          if (await repositories.devices.findByUniqueId(input.uniqueId)) throw new AppError('DEVICE_EXISTS');
          if (!caller.administrator && (await repositories.tokens.findLiveByUniqueId(input.uniqueId))) {
            throw new AppError('CLAIM_TOKEN_REQUIRED', 'This device comes with a claim token: send it as deviceToken, or claim the device with it');
          }
          return (await repositories.devices.insert(values)).id;
        });
      }
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppError('DEVICE_EXISTS');
      throw error;
    }
    await announceAccessChange(this.bus, { userIds: [caller.id] });
    return toView(await requireDevice(this.store, deviceId), OWNER_VIEWPOINT);
  }

  /** A create with deviceToken: the token must be the caller's to claim and name the same device. */
  private async createClaimed(caller: UserAccess, rawToken: string, values: Insertable<DevicesTable>, allowance: DeviceAllowance | undefined, now: number): Promise<number> {
    const token = normaliseClaimToken(rawToken);
    if (!token) throw new AppError('CLAIM_TOKEN_NOT_FOUND');
    const deviceId = await this.store.transaction(async (repositories) => {
      await assertMayOwnAnother(repositories, caller.id, allowance);
      const claim = await repositories.tokens.find(token);
      if (!claim || claim.status === 'revoked') throw new AppError('CLAIM_TOKEN_NOT_FOUND');
      if (claim.status === 'claimed') throw claimConflict(claim, caller.id);
      if (claim.unique_id === null) throw new AppError('DEVICE_NOT_CONFIGURED');
      if (claim.unique_id !== values.unique_id) throw new AppError('CLAIM_TOKEN_MISMATCH');
      if (await repositories.devices.findByUniqueId(values.unique_id)) throw new AppError('DEVICE_EXISTS');
      if (!(await repositories.tokens.markClaimed(token, values.unique_id, caller.id, now))) return undefined;
      const device = await repositories.devices.insert(values);
      await repositories.tokens.attachDevice(token, device.id);
      return device.id;
    });
    if (deviceId !== undefined) return deviceId;
    // Another request claimed the token between our read and our write.
    const claim = await this.store.tokens.find(token);
    throw claim?.status === 'claimed' ? claimConflict(claim, caller.id) : new AppError('CLAIM_TOKEN_NOT_FOUND');
  }

  async update(callerId: number, deviceId: number, changes: DeviceChanges): Promise<DeviceView> {
    const caller = await requireUser(this.users, callerId);
    await requireDeviceFor(this.store, caller, deviceId, 'manage');
    const update: Updateable<DevicesTable> = { updated_at: Date.now() };
    if (changes.name !== undefined) update.name = changes.name;
    if (changes.phone !== undefined) update.phone = changes.phone;
    if (changes.model !== undefined) update.model = changes.model;
    if (changes.contact !== undefined) update.contact = changes.contact;
    if (changes.category !== undefined) update.category = changes.category;
    if (changes.groupId !== undefined) update.group_id = changes.groupId;
    if (changes.disabled !== undefined) update.disabled = changes.disabled ? 1 : 0;
    if (changes.attributes !== undefined) update.attributes = JSON.stringify(changes.attributes);
    await this.store.devices.update(deviceId, update);
    await announceAccessChange(this.bus, { deviceIds: [deviceId] });
    const updated = await requireDevice(this.store, deviceId);
    return toView(updated, await this.viewpointOf(caller, updated));
  }

  async delete(callerId: number, deviceId: number): Promise<void> {
    const caller = await requireUser(this.users, callerId);
    await requireDeviceFor(this.store, caller, deviceId, 'manage');
    await this.removeDevice(deviceId);
  }

  /**
   * Claims a token for the caller: creates its device, or takes over the one already registered
   * under its uniqueId (e.g. by the seller's stock account), whose shares then end.
   */
  async claim(callerId: number, rawToken: string | undefined): Promise<ClaimResult> {
    const caller = await requireUser(this.users, callerId);
    assertAccountMay(caller, 'changeDevices');
    if (rawToken === undefined || rawToken.trim() === '') throw new AppError('CLAIM_TOKEN_REQUIRED');
    const token = normaliseClaimToken(rawToken);
    if (!token) throw new AppError('CLAIM_TOKEN_NOT_FOUND');
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const claim = await this.store.tokens.find(token);
      if (!claim || claim.status === 'revoked') throw new AppError('CLAIM_TOKEN_NOT_FOUND');
      if (claim.status === 'claimed') {
        if (claim.claimed_by !== caller.id) throw new AppError('CLAIM_TOKEN_ALREADY_CLAIMED');
        return { success: true, alreadyClaimed: true, ...(await this.ownedView(claim.device_id, caller.id)) };
      }
      if (claim.unique_id === null) throw new AppError('DEVICE_NOT_CONFIGURED');
      const deviceId = await this.claimOnce(token, claim.unique_id, claim, caller.id, await this.deviceAllowance(caller));
      if (deviceId === undefined) continue;
      // A device taken over leaves its former owner and its sharees.
      await announceAccessChange(this.bus, { userIds: [caller.id], deviceIds: [deviceId] });
      return { success: true, alreadyClaimed: false, ...(await this.ownedView(deviceId, caller.id)) };
    }
    throw new AppError('CLAIM_TOKEN_ALREADY_CLAIMED');
  }

  /** One attempt; undefined when a concurrent request changed the token or the device first (then read again). */
  private async claimOnce(token: string, uniqueId: string, claim: ClaimTokenRow, userId: number, allowance: DeviceAllowance | undefined): Promise<number | undefined> {
    const now = Date.now();
    try {
      return await this.store.transaction(async (repositories) => {
        await assertMayOwnAnother(repositories, userId, allowance);
        if (!(await repositories.tokens.markClaimed(token, uniqueId, userId, now))) return undefined;
        const existing = await repositories.devices.findByUniqueId(uniqueId);
        let deviceId: number;
        if (existing) {
          await repositories.devices.deleteSharesOfDevice(existing.id);
          await repositories.devices.update(existing.id, { owner_id: userId, updated_at: now });
          deviceId = existing.id;
        } else {
          const model = claim.model_name ?? claim.model_code;
          const device = await repositories.devices.insert({
            name: model,
            unique_id: uniqueId,
            status: 'offline',
            model,
            disabled: 0,
            attributes: '{}',
            owner_id: userId,
            created_at: now,
            updated_at: now,
          });
          deviceId = device.id;
        }
        await repositories.tokens.attachDevice(token, deviceId);
        return deviceId;
      });
    } catch (error) {
      if (isUniqueViolation(error)) return undefined;
      throw error;
    }
  }

  /** The caps on the user's devices, read before the transaction that counts them; undefined for administrators, who have none. */
  private async deviceAllowance(user: UserAccess): Promise<DeviceAllowance | undefined> {
    if (user.administrator) return undefined;
    return { max: this.policy.devicesPerUser, plan: await this.policy.plans?.limitOf(user.id, 'devices') };
  }

  private async ownedView(deviceId: number | null, userId: number): Promise<{ device?: DeviceView }> {
    const row = deviceId === null ? undefined : await this.store.devices.findById(deviceId);
    return row && row.owner_id === userId ? { device: toView(row, OWNER_VIEWPOINT) } : {};
  }

  /** The account is gone: its devices (with their tracking data, via the event), its shares and its claims. */
  async removeUserData(userId: number): Promise<void> {
    for (const deviceId of await this.store.devices.idsOwnedBy(userId)) await this.removeDevice(deviceId);
    await this.store.devices.deleteSharesWithUser(userId);
    await this.store.tokens.releaseClaimedBy(userId, Date.now());
    // A claim token shows only to the owner of its device, who is its claimer: the user's own entries cover the released tokens.
    await announceAccessChange(this.bus, { userIds: [userId] });
  }

  private async removeDevice(deviceId: number): Promise<void> {
    const now = Date.now();
    const deleted = await this.store.transaction(async (repositories) => {
      await repositories.tokens.releaseOfDevice(deviceId, now);
      await repositories.devices.deleteSharesOfDevice(deviceId);
      return repositories.devices.delete(deviceId, this.facts);
    });
    const event: DeviceDeleted = { deviceId };
    if (deleted) await this.bus.publish('devices.device.deleted', event);
  }

  exists(deviceId: number): Promise<boolean> {
    return this.store.devices.exists(deviceId);
  }

  async findByUniqueId(uniqueId: string): Promise<DeviceRecord | undefined> {
    const row = await this.store.devices.findByUniqueId(uniqueId);
    return row && toRecord(row);
  }

  async getDevices(ids: readonly number[]): Promise<DeviceRecord[]> {
    return (await this.store.devices.findByIds(ids)).map(toRecord);
  }

  async viewsFor(access: DeviceAccess, ids: readonly number[]): Promise<DeviceView[]> {
    const views: DeviceView[] = [];
    for (const row of await this.store.devices.findByIds(ids)) {
      const grant = access.grant(row.id);
      if (row.owner_id === access.userId) views.push(toView(row, OWNER_VIEWPOINT));
      else if (grant) views.push(toView(row, grant));
      else if (access.administrator) views.push(toView(row, ADMINISTRATOR_VIEWPOINT));
    }
    return views;
  }

  async updateStatus(deviceId: number, update: DeviceStatusUpdate): Promise<boolean> {
    if (update.status === undefined && update.lastUpdate === undefined && update.positionId === undefined) return this.exists(deviceId);
    return (await this.updateStatuses([{ deviceId, ...update }])).length === 1;
  }

  /** See DeviceAccessApi.updateStatuses. */
  async updateStatuses(batch: readonly DeviceStatusChange[]): Promise<number[]> {
    const rows = new Map<number, StatusChangeRow>();
    for (const change of batch) {
      const row = rows.get(change.deviceId) ?? { id: change.deviceId };
      if (change.status !== undefined) row.status = change.status;
      if (change.lastUpdate !== undefined) row.last_update = change.lastUpdate;
      if (change.positionId !== undefined) row.position_id = change.positionId;
      rows.set(change.deviceId, row);
    }
    const changed = [...rows.values()].filter((row) => row.status !== undefined || row.last_update !== undefined || row.position_id !== undefined);
    if (changed.length === 0) return [];
    const deviceIds = await this.store.transaction((repositories) => repositories.devices.updateStatuses(changed));
    const event: DevicesUpdated = { deviceIds };
    if (deviceIds.length > 0) await this.bus.publish('devices.device.updated', event);
    return deviceIds;
  }

  /** How the caller sees a device, or 403 when they may not see it at all. */
  private async viewpointOf(caller: UserAccess, row: DeviceWithToken): Promise<Viewpoint> {
    if (row.owner_id === caller.id) return OWNER_VIEWPOINT;
    const share = await this.store.devices.findShare(row.id, caller.id);
    if (share) {
      return { isOwner: false, permissions: caller.administrator ? ALL_PERMISSIONS : toPermissions(share), sharedBy: share.shared_by };
    }
    if (caller.administrator) return ADMINISTRATOR_VIEWPOINT;
    throw new AppError('FORBIDDEN', 'You have no access to this device');
  }
}

/** How `user` sees one of their owned or shared devices; an administrator holds every permission on shares too. */
function visibleViewpoint(row: VisibleDeviceRow, user: UserAccess): Viewpoint {
  if (row.owner_id === user.id) return OWNER_VIEWPOINT;
  return { isOwner: false, permissions: user.administrator ? ALL_PERMISSIONS : toPermissions(row), ...(row.shared_by === null ? {} : { sharedBy: row.shared_by }) };
}


/** MAX_DEVICES_PER_USER and the plan's `devices`. */
interface DeviceAllowance {
  max: number;
  plan: PlanLimit | undefined;
}

/**
 * The first step of a transaction that gives the user a device: locks the user's devices (so parallel requests
 * count one after another, on any instance), then 409 LIMIT_REACHED when they own MAX_DEVICES_PER_USER devices
 * already, 402 PLAN_LIMIT_REACHED at their plan's `devices`.
 */
async function assertMayOwnAnother(repositories: DeviceRepositories, userId: number, allowance: DeviceAllowance | undefined): Promise<void> {
  await repositories.devices.lockOwner(userId);
  if (!allowance) return;
  const owned = await repositories.devices.countOwnedBy(userId);
  if (owned >= allowance.max) throw limitReached('devices', allowance.max, owned, `A user may own at most ${allowance.max} devices (MAX_DEVICES_PER_USER)`);
  allowance.plan?.assert(owned);
}

function claimConflict(claim: ClaimTokenRow, userId: number): AppError {
  return claim.claimed_by === userId ? new AppError('DEVICE_EXISTS') : new AppError('CLAIM_TOKEN_ALREADY_CLAIMED');
}
