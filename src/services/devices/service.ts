import type { Insertable, Updateable } from 'kysely';
import type { EventBus } from '../../platform/bus.ts';
import { AppError } from '../../platform/http/errors.ts';
import type { UserAccess, UserDirectory } from '../auth/users/directory.ts';
import { ALL_PERMISSIONS } from './access.ts';
import type { DeviceAccess, DeviceRecord, DeviceStatusUpdate, DeviceView } from './access.ts';
import { assertMayChangeDevices, resolveCaller } from './callers.ts';
import { normaliseClaimToken } from './claim-tokens/code.ts';
import type { ClaimTokenRow } from './claim-tokens/repository.ts';
import type { DeviceDeleted } from './events.ts';
import type { DeviceFilters, DeviceWithToken } from './repository.ts';
import type { DevicesStore } from './store.ts';
import { isUniqueViolation } from './store.ts';
import type { DevicesTable } from './tables.ts';
import { ADMINISTRATOR_VIEWPOINT, OWNER_VIEWPOINT, toPermissions, toRecord, toView } from './views.ts';
import type { Viewpoint } from './views.ts';

/** Serialised attributes beyond this are refused: they travel with every device in lists and live updates. */
export const MAX_ATTRIBUTES_BYTES = 16_384;
/** Concurrent claims of one token settle within a retry or two; more means something keeps changing it. */
const CLAIM_ATTEMPTS = 3;

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

  constructor(store: DevicesStore, users: UserDirectory, bus: EventBus) {
    this.store = store;
    this.users = users;
    this.bus = bus;
  }

  /** Owned and shared devices of the caller, or (administrators only) of `userId`, as that user sees them. */
  async list(callerId: number, query: DeviceListQuery): Promise<DeviceView[]> {
    const caller = await resolveCaller(this.users, callerId);
    let subject: UserAccess = caller;
    if (query.userId !== undefined && query.userId !== caller.id) {
      if (!caller.administrator) throw new AppError('FORBIDDEN', 'Only administrators may list the devices of another user');
      const target = await this.users.get(query.userId);
      if (!target) return [];
      subject = target;
    }
    const filters: DeviceFilters = { ids: query.ids, uniqueIds: query.uniqueIds };
    const [owned, shared] = await Promise.all([
      this.store.devices.listOwned(subject.id, filters),
      this.store.devices.listShared(subject.id, filters),
    ]);
    const ownedIds = new Set(owned.map((row) => row.id));
    const views = owned.map((row) => toView(row, OWNER_VIEWPOINT));
    for (const row of shared) {
      if (ownedIds.has(row.id)) continue;
      views.push(toView(row, { isOwner: false, permissions: subject.administrator ? ALL_PERMISSIONS : toPermissions(row), sharedBy: row.shared_by }));
    }
    return views.sort((a, b) => a.id - b.id);
  }

  async get(callerId: number, deviceId: number): Promise<DeviceView> {
    const caller = await resolveCaller(this.users, callerId);
    const row = await this.requireDevice(deviceId);
    return toView(row, await this.viewpointOf(caller, row));
  }

  async create(callerId: number, input: DeviceInput): Promise<DeviceView> {
    const caller = await resolveCaller(this.users, callerId);
    assertMayChangeDevices(caller);
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
      attributes: serialiseAttributes(input.attributes ?? {}),
      owner_id: caller.id,
      created_at: now,
      updated_at: now,
    };
    let deviceId: number;
    try {
      if (input.deviceToken !== undefined) {
        deviceId = await this.createClaimed(caller, input.deviceToken, values, now);
      } else {
        if (await this.store.devices.findByUniqueId(input.uniqueId)) throw new AppError('DEVICE_EXISTS');
        if (!caller.administrator && (await this.store.tokens.findLiveByUniqueId(input.uniqueId))) {
          throw new AppError('CLAIM_TOKEN_REQUIRED', 'This device comes with a claim token: send it as deviceToken, or claim the device with it');
        }
        deviceId = (await this.store.devices.insert(values)).id;
      }
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppError('DEVICE_EXISTS');
      throw error;
    }
    return toView(await this.requireDevice(deviceId), OWNER_VIEWPOINT);
  }

  /** A create with deviceToken: the token must be the caller's to claim and name the same device. */
  private async createClaimed(caller: UserAccess, rawToken: string, values: Insertable<DevicesTable>, now: number): Promise<number> {
    const token = normaliseClaimToken(rawToken);
    if (!token) throw new AppError('CLAIM_TOKEN_NOT_FOUND');
    const deviceId = await this.store.transaction(async (repositories) => {
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
    const caller = await resolveCaller(this.users, callerId);
    const row = await this.requireDevice(deviceId);
    assertOwnerOrAdministrator(caller, row);
    assertMayChangeDevices(caller);
    const update: Updateable<DevicesTable> = { updated_at: Date.now() };
    if (changes.name !== undefined) update.name = changes.name;
    if (changes.phone !== undefined) update.phone = changes.phone;
    if (changes.model !== undefined) update.model = changes.model;
    if (changes.contact !== undefined) update.contact = changes.contact;
    if (changes.category !== undefined) update.category = changes.category;
    if (changes.groupId !== undefined) update.group_id = changes.groupId;
    if (changes.disabled !== undefined) update.disabled = changes.disabled ? 1 : 0;
    if (changes.attributes !== undefined) update.attributes = serialiseAttributes(changes.attributes);
    await this.store.devices.update(deviceId, update);
    const updated = await this.requireDevice(deviceId);
    return toView(updated, await this.viewpointOf(caller, updated));
  }

  async delete(callerId: number, deviceId: number): Promise<void> {
    const caller = await resolveCaller(this.users, callerId);
    const row = await this.requireDevice(deviceId);
    assertOwnerOrAdministrator(caller, row);
    assertMayChangeDevices(caller);
    await this.removeDevice(deviceId);
  }

  /**
   * Claims a token for the caller: creates its device, or takes over the one already registered
   * under its uniqueId (e.g. by the seller's stock account), whose shares then end.
   */
  async claim(callerId: number, rawToken: string | undefined): Promise<ClaimResult> {
    const caller = await resolveCaller(this.users, callerId);
    assertMayChangeDevices(caller);
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
      const deviceId = await this.claimOnce(token, claim.unique_id, claim, caller.id);
      if (deviceId !== undefined) return { success: true, alreadyClaimed: false, ...(await this.ownedView(deviceId, caller.id)) };
    }
    throw new AppError('CLAIM_TOKEN_ALREADY_CLAIMED');
  }

  /** One attempt; undefined when a concurrent request changed the token or the device first (then read again). */
  private async claimOnce(token: string, uniqueId: string, claim: ClaimTokenRow, userId: number): Promise<number | undefined> {
    const now = Date.now();
    try {
      return await this.store.transaction(async (repositories) => {
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

  private async ownedView(deviceId: number | null, userId: number): Promise<{ device?: DeviceView }> {
    const row = deviceId === null ? undefined : await this.store.devices.findById(deviceId);
    return row && row.owner_id === userId ? { device: toView(row, OWNER_VIEWPOINT) } : {};
  }

  /** The account is gone: its devices (with their tracking data, via the event), its shares and its claims. */
  async removeUserData(userId: number): Promise<void> {
    for (const deviceId of await this.store.devices.idsOwnedBy(userId)) await this.removeDevice(deviceId);
    await this.store.devices.deleteSharesWithUser(userId);
    await this.store.tokens.releaseClaimedBy(userId, Date.now());
  }

  private async removeDevice(deviceId: number): Promise<void> {
    const now = Date.now();
    const deleted = await this.store.transaction(async (repositories) => {
      await repositories.tokens.releaseOfDevice(deviceId, now);
      await repositories.devices.deleteSharesOfDevice(deviceId);
      return repositories.devices.delete(deviceId);
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
    const changes: Updateable<DevicesTable> = {};
    if (update.status !== undefined) changes.status = update.status;
    if (update.lastUpdate !== undefined) changes.last_update = update.lastUpdate;
    if (update.positionId !== undefined) changes.position_id = update.positionId;
    if (Object.keys(changes).length === 0) return this.exists(deviceId);
    return (await this.store.devices.update(deviceId, changes)) !== undefined;
  }

  private async requireDevice(deviceId: number): Promise<DeviceWithToken> {
    const row = await this.store.devices.findById(deviceId);
    if (!row) throw new AppError('NOT_FOUND', 'No such device');
    return row;
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

function assertOwnerOrAdministrator(caller: UserAccess, row: DeviceWithToken): void {
  if (row.owner_id !== caller.id && !caller.administrator) {
    throw new AppError('FORBIDDEN', 'Only the owner or an administrator may change this device');
  }
}

function claimConflict(claim: ClaimTokenRow, userId: number): AppError {
  return claim.claimed_by === userId ? new AppError('DEVICE_EXISTS') : new AppError('CLAIM_TOKEN_ALREADY_CLAIMED');
}

function serialiseAttributes(attributes: Record<string, unknown>): string {
  const text = JSON.stringify(attributes);
  if (Buffer.byteLength(text) > MAX_ATTRIBUTES_BYTES) {
    throw new AppError('VALIDATION_FAILED', `/body/attributes must serialise to at most ${MAX_ATTRIBUTES_BYTES} bytes`, {
      details: [{ path: '/body/attributes', message: `must serialise to at most ${MAX_ATTRIBUTES_BYTES} bytes` }],
    });
  }
  return text;
}
