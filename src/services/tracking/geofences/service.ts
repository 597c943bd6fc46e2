import { randomUUID } from 'node:crypto';
import type { Updateable } from 'kysely';
import type { EventBus } from '../../../platform/bus.ts';
import type { ServerLimits } from '../../../config.ts';
import { limitReached } from '../../../platform/http/errors.ts';
import { AppError } from '../errors.ts';
import { requireUser } from '../../auth/users/directory.ts';
import type { UserAccess, UserDirectory } from '../../auth/users/directory.ts';
import type { Entitlement, PlanLimit } from '../../billing/module.ts';
import type { DeviceAccess, DeviceAccessApi } from '../../devices/access.ts';
import { assertAccountMay, holds } from '../../../platform/access-policy.ts';
import type { GeofencesChanged } from '../domain-events.ts';
import { AreaError, formatArea, parseArea } from '../geo/index.ts';
import type { LatLon } from '../geo/index.ts';
import type { TrackingStore } from '../store.ts';
import type { GeofencesTable } from '../tables.ts';
import { GeofenceIndexes } from './index-cache.ts';
import type { GeofenceRepository, GeofenceRow } from './repository.ts';
import type { Geofence } from '../../../client/tracking-types.ts';

/** The Geofence of spec §2.6. */
export type GeofenceView = Geofence;

export interface GeofenceInput {
  name: string;
  area: string;
  description?: string | null;
  calendarId?: number | null;
  attributes?: Record<string, unknown>;
}

export type GeofenceChanges = Partial<GeofenceInput>;

export interface GeofenceListQuery {
  /** Whose geofences (administrators: anyone; others: only themselves). */
  userId?: number;
  /** Also every geofence that applies to a device shared with that user with the geofences permission. */
  all?: boolean;
}

function toView(row: GeofenceRow): GeofenceView {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    area: row.area,
    calendarId: row.calendar_id,
    attributes: JSON.parse(row.attributes) as Record<string, unknown>,
  };
}

/** The owners whose geofences apply to a device shared with the user with the geofences permission. */
function sharingOwners(access: DeviceAccess): Set<number> {
  return new Set(access.grants.filter((grant) => !grant.isOwner && holds(access.administrator, grant, 'geofences')).map((grant) => grant.ownerId));
}

/** The caps a geofence write is checked against (ServerLimits). */
export type GeofenceLimits = Pick<ServerLimits, 'geofencesPerUser' | 'geofencePointsPerUser'>;

/** An area as stored: its normalised text and its number of points (a circle counts 1). */
interface NormalisedArea {
  text: string;
  points: number;
}

/**
 * The normalised area, or 400 INVALID_AREA saying what is wrong and where. A LINESTRING's buffer
 * width (attributes.polylineDistance) is checked with it.
 */
function normaliseArea(text: string, attributes: Record<string, unknown>): NormalisedArea {
  const width = attributes.polylineDistance;
  if (width !== undefined && !(typeof width === 'number' && Number.isFinite(width) && width >= 0)) {
    throw new AppError('INVALID_AREA', `attributes.polylineDistance must be a number of metres >= 0, got ${String(JSON.stringify(width)).slice(0, 40)}`);
  }
  try {
    const area = parseArea(text);
    return { text: formatArea(area), points: area.kind === 'circle' ? 1 : area.points.length };
  } catch (error) {
    if (error instanceof AreaError) throw new AppError('INVALID_AREA', error.message);
    throw error;
  }
}

/**
 * Geofences belong to their creator and apply to every device the creator owns (DESIGN §5.4).
 * Reading: the owner, administrators, and users shared a device of the owner with the geofences
 * permission. Changing: the owner and administrators.
 */
export class GeofenceService {
  private readonly store: TrackingStore;
  private readonly devices: DeviceAccessApi;
  private readonly users: UserDirectory;
  private readonly bus: EventBus;
  private readonly indexes: GeofenceIndexes;
  private readonly limits: GeofenceLimits;
  /** Tells this process's own change events from other processes' (see 'tracking.geofences.changed'). */
  private readonly origin = randomUUID();

  /** Billing's plans: the owner's `geofences` limit; undefined where no billing module can be reached. */
  private readonly plans: Entitlement | undefined;

  constructor(store: TrackingStore, devices: DeviceAccessApi, users: UserDirectory, bus: EventBus, limits: GeofenceLimits, plans: Entitlement | undefined) {
    this.store = store;
    this.plans = plans;
    this.devices = devices;
    this.users = users;
    this.bus = bus;
    this.limits = limits;
    this.indexes = new GeofenceIndexes((ownerId) => store.geofences.listOfOwners([ownerId]));
  }

  async list(userId: number, scope: object, query: GeofenceListQuery): Promise<GeofenceView[]> {
    const access = await this.devices.accessFor(userId, scope);
    const subjectId = query.userId ?? userId;
    if (subjectId !== userId && !access.administrator) throw new AppError('FORBIDDEN', 'Only administrators may list the geofences of another user');
    if (!query.all) return (await this.store.geofences.listOfOwners([subjectId])).map(toView);
    const subject = subjectId === userId ? access : await this.devices.accessFor(subjectId);
    if (subject.administrator) return (await this.store.geofences.listAll()).map(toView);
    const owners = sharingOwners(subject).add(subjectId);
    return (await this.store.geofences.listOfOwners([...owners])).map(toView);
  }

  async get(userId: number, scope: object, geofenceId: number): Promise<GeofenceView> {
    const { row } = await this.readable(userId, scope, geofenceId);
    return toView(row);
  }

  async create(userId: number, input: GeofenceInput): Promise<GeofenceView> {
    const user = await requireUser(this.users, userId);
    assertAccountMay(user, 'write');
    const attributes = input.attributes ?? {};
    const area = normaliseArea(input.area, attributes);
    // Undefined: an administrator, held to no cap; `limit` undefined: no plan applies, the server caps still do.
    const plan = user.administrator ? undefined : { limit: await this.plans?.limitOf(userId, 'geofences') };
    const now = Date.now();
    const row = await this.store.transaction(async ({ geofences }) => {
      await geofences.lockOwner(userId);
      if (plan) await this.assertWithinLimits(geofences, userId, { geofences: 1, points: area.points, plan: plan.limit });
      return geofences.insert({
        owner_id: userId,
        name: input.name,
        description: input.description ?? null,
        area: area.text,
        points: area.points,
        calendar_id: input.calendarId ?? null,
        attributes: JSON.stringify(attributes),
        created_at: now,
        updated_at: now,
      });
    });
    this.indexes.put(row);
    await this.announce(row.owner_id);
    return toView(row);
  }

  async update(userId: number, scope: object, geofenceId: number, changes: GeofenceChanges): Promise<GeofenceView> {
    const { row, user } = await this.changeable(userId, scope, geofenceId);
    const update: Updateable<GeofencesTable> = { updated_at: Date.now() };
    if (changes.name !== undefined) update.name = changes.name;
    if (changes.description !== undefined) update.description = changes.description;
    if (changes.calendarId !== undefined) update.calendar_id = changes.calendarId;
    if (changes.attributes !== undefined) update.attributes = JSON.stringify(changes.attributes);
    const area =
      changes.area !== undefined || changes.attributes !== undefined
        ? normaliseArea(changes.area ?? row.area, changes.attributes ?? (JSON.parse(row.attributes) as Record<string, unknown>))
        : undefined;
    if (area) {
      update.area = area.text;
      update.points = area.points;
    }
    const updated = await this.store.transaction(async ({ geofences }) => {
      if (!area || user.administrator) return geofences.update(geofenceId, update);
      await geofences.lockOwner(row.owner_id);
      // The points the area adds to, as stored now: a parallel update may have changed them since `row` was read.
      const stored = await geofences.findById(geofenceId);
      if (stored && area.points > stored.points) await this.assertWithinLimits(geofences, row.owner_id, { geofences: 0, points: area.points - stored.points });
      return geofences.update(geofenceId, update);
    });
    if (!updated) throw new AppError('NOT_FOUND', 'No such geofence');
    this.indexes.put(updated);
    await this.announce(updated.owner_id);
    return toView(updated);
  }

  async delete(userId: number, scope: object, geofenceId: number): Promise<void> {
    const { row } = await this.changeable(userId, scope, geofenceId);
    if (await this.store.geofences.delete(geofenceId)) {
      this.indexes.remove(row.owner_id, geofenceId);
      await this.announce(row.owner_id);
    }
  }

  /** See TrackingApi.geofencesContaining. */
  containing(ownerId: number, point: LatLon): Promise<number[]> {
    return this.indexes.containing(ownerId, point);
  }

  /** The account is gone, and its geofences with it (idempotent: a fact may be handled again after a crash). */
  async removeUser(userId: number): Promise<void> {
    await this.store.geofences.deleteOfOwner(userId);
    this.forgetOwner(userId);
  }

  /** Drops this process's index of an owner's geofences (the owner is gone, or another instance changed them). */
  forgetOwner(userId: number): void {
    this.indexes.forget(userId);
  }

  /** Another process changed an owner's geofences: this process's index of them is stale. */
  onChanged(event: GeofencesChanged): void {
    if (event.origin !== this.origin) this.indexes.forget(event.ownerId);
  }

  /**
   * Inside the transaction that writes, holding the owner's lock: 409 LIMIT_REACHED unless the owner may add
   * `geofences` geofences holding `points` more points. The caps bound the work of every position of the owner's
   * devices (containment runs over their geofences) and the size of the owner's index in memory.
   * 402 PLAN_LIMIT_REACHED past the plan's `geofences`.
   */
  private async assertWithinLimits(repository: GeofenceRepository, ownerId: number, adding: { geofences: number; points: number; plan?: PlanLimit }): Promise<void> {
    const { geofences, points, plan } = adding;
    const usage = await repository.usageOf(ownerId);
    const { geofencesPerUser, geofencePointsPerUser } = this.limits;
    if (geofences > 0 && usage.geofences + geofences > geofencesPerUser) {
      throw limitReached('geofences', geofencesPerUser, usage.geofences, `A user may have at most ${geofencesPerUser} geofences (MAX_GEOFENCES_PER_USER)`);
    }
    if (usage.points + points > geofencePointsPerUser) {
      const message = `The areas of a user's geofences may hold at most ${geofencePointsPerUser} points together (MAX_GEOFENCE_POINTS_PER_USER); this one would add ${points} to ${usage.points}`;
      throw limitReached('geofencePoints', geofencePointsPerUser, usage.points, message, '/body/area');
    }
    plan?.assert(usage.geofences, geofences);
  }

  private announce(ownerId: number): Promise<void> {
    return this.bus.publish('tracking.geofences.changed', { ownerId, origin: this.origin });
  }

  /** 404 when no such geofence, 403 when the caller may not see it. */
  private async readable(userId: number, scope: object, geofenceId: number): Promise<{ row: GeofenceRow; access: DeviceAccess }> {
    const row = await this.store.geofences.findById(geofenceId);
    if (!row) throw new AppError('NOT_FOUND', 'No such geofence');
    const access = await this.devices.accessFor(userId, scope);
    if (row.owner_id !== userId && !access.administrator && !sharingOwners(access).has(row.owner_id)) {
      throw new AppError('FORBIDDEN', 'You may not see this geofence');
    }
    return { row, access };
  }

  /** As readable, and 403 unless the caller owns the geofence or is an administrator (and may write at all). */
  private async changeable(userId: number, scope: object, geofenceId: number): Promise<{ row: GeofenceRow; user: UserAccess }> {
    const { row, access } = await this.readable(userId, scope, geofenceId);
    if (row.owner_id !== userId && !access.administrator) throw new AppError('FORBIDDEN', 'Only the owner may change this geofence');
    const user = await requireUser(this.users, userId);
    assertAccountMay(user, 'write');
    return { row, user };
  }
}
