import { isoOrNull } from '../../platform/http/schemas.ts';
import { ALL_PERMISSIONS } from './access.ts';
import type { DeviceGrant, DevicePermissions, DeviceRecord, DeviceStatus, DeviceView } from './access.ts';
import { formatClaimToken } from './claim-tokens/code.ts';
import type { DeviceRow, DeviceWithToken, ShareFlags } from './repository.ts';

/** A flag is granted only when 1 (null: no share). */
export function toPermissions(flags: { [Flag in keyof ShareFlags]: ShareFlags[Flag] | null }): DevicePermissions {
  return {
    position: flags.position === 1,
    events: flags.events === 1,
    geofences: flags.geofences === 1,
    notifications: flags.notifications === 1,
    commands: flags.commands === 1,
  };
}

export function toFlags(permissions: DevicePermissions): ShareFlags {
  return {
    position: permissions.position ? 1 : 0,
    events: permissions.events ? 1 : 0,
    geofences: permissions.geofences ? 1 : 0,
    notifications: permissions.notifications ? 1 : 0,
    commands: permissions.commands ? 1 : 0,
  };
}

export function toRecord(row: DeviceRow): DeviceRecord {
  return { ...storedFields(row), ownerId: row.owner_id };
}

/** What a device's record and every view of it share: times still epoch milliseconds. */
function storedFields(row: DeviceRow): Omit<DeviceRecord, 'ownerId'> {
  return {
    id: row.id,
    name: row.name,
    uniqueId: row.unique_id,
    status: row.status as DeviceStatus,
    lastUpdate: row.last_update,
    positionId: row.position_id,
    phone: row.phone,
    model: row.model,
    contact: row.contact,
    category: row.category,
    disabled: row.disabled === 1,
    expirationTime: row.expiration_time,
    groupId: row.group_id,
    calendarId: row.calendar_id,
    attributes: JSON.parse(row.attributes) as Record<string, unknown>,
  };
}

/** How one user relates to a device: the per-user half of a DeviceView. */
export type Viewpoint = Pick<DeviceGrant, 'isOwner' | 'permissions' | 'sharedBy'>;

export const OWNER_VIEWPOINT: Viewpoint = { isOwner: true, permissions: ALL_PERMISSIONS };
/** An administrator reaching a device that is not theirs: every permission, nobody shared it. */
export const ADMINISTRATOR_VIEWPOINT: Viewpoint = { isOwner: false, permissions: ALL_PERMISSIONS };

/** The spec Device as one user sees it: the claim token only for its owner, sharedBy only for others. */
export function toView(row: DeviceWithToken, viewpoint: Viewpoint): DeviceView {
  return {
    ...storedFields(row),
    lastUpdate: isoOrNull(row.last_update),
    expirationTime: isoOrNull(row.expiration_time),
    ...(viewpoint.isOwner && row.claim_token ? { claimToken: formatClaimToken(row.claim_token) } : {}),
    isOwner: viewpoint.isOwner,
    permissions: { ...viewpoint.permissions },
    ...(!viewpoint.isOwner && viewpoint.sharedBy !== undefined ? { sharedBy: viewpoint.sharedBy } : {}),
  };
}
