import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { IdParam, Nullable } from '../../../platform/http/schemas.ts';
import type { DeviceAccessApi } from '../access.ts';
import type { DeviceAccessResolver } from '../grants.ts';
import { DeviceSchema, DeviceStatus, PermissionsSchema, deviceFields } from '../schemas.ts';

/**
 * The devices module's interface (DeviceAccessApi) for a tracking process elsewhere
 * (`devices/remote.ts`): service callers only (X-Internal-Token), never through the gateway.
 * Every route is idempotent, so the internal client may send a call again.
 */

const TAGS = ['internal'];
const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
const EpochMs = Type.Integer({ description: 'Epoch milliseconds' });

/** At most this many devices per call; the remote adapter sends longer lists in parts. */
export const INTERNAL_BATCH = 1000;
/** Longer than any stored uniqueId (128), so a tracker's longer identifier is answered "unknown", not refused. */
export const MAX_LOOKUP_UNIQUE_ID = 1024;

const GrantSchema = Type.Object({
  deviceId: Id,
  ownerId: Id,
  isOwner: Type.Boolean(),
  permissions: PermissionsSchema,
  sharedBy: Type.Optional(Id),
});

export const DeviceAccessDataSchema = Type.Object({
  userId: Id,
  administrator: Type.Boolean(),
  grants: Type.Array(GrantSchema),
});

const DeviceRecordSchema = Type.Object({ ...deviceFields(EpochMs), ownerId: Id });

const Ids = Type.Array(Id, { minItems: 1, maxItems: INTERNAL_BATCH });

const StatusChange = Type.Object({
  deviceId: Id,
  status: Type.Optional(DeviceStatus),
  lastUpdate: Type.Optional(Nullable(EpochMs)),
  positionId: Type.Optional(Nullable(Id)),
});

export function registerInternalDeviceRoutes(app: HttpApp, deps: { access: DeviceAccessResolver; devices: DeviceAccessApi }): void {
  const { access, devices } = deps;

  app.get(
    '/api/devices/internal/access/:userId',
    {
      schema: {
        tags: TAGS,
        summary: 'Which devices a user may see, with which permissions (services only, X-Internal-Token)',
        params: Type.Object({ userId: IdParam }),
        response: { 200: DeviceAccessDataSchema },
      },
    },
    async (request) => access.dataOf(request.params.userId),
  );

  app.post(
    '/api/devices/internal/devices/by-id',
    {
      schema: {
        tags: TAGS,
        summary: 'Stored devices with these ids, ascending; unknown ids are skipped (services only)',
        body: Type.Object({ ids: Ids }),
        response: { 200: Type.Array(DeviceRecordSchema) },
      },
    },
    async (request) => devices.getDevices(request.body.ids),
  );

  app.post(
    '/api/devices/internal/devices/by-unique-id',
    {
      schema: {
        tags: TAGS,
        summary: 'The device a tracker identifies itself as, or null (services only)',
        body: Type.Object({ uniqueId: Type.String({ minLength: 1, maxLength: MAX_LOOKUP_UNIQUE_ID }) }),
        response: { 200: Type.Object({ device: Nullable(DeviceRecordSchema) }) },
      },
    },
    async (request) => ({ device: (await devices.findByUniqueId(request.body.uniqueId)) ?? null }),
  );

  app.post(
    '/api/devices/internal/views',
    {
      schema: {
        tags: TAGS,
        summary: 'The devices among ids that the user may see, as that user sees them (services only)',
        body: Type.Object({ userId: Id, ids: Ids }),
        response: { 200: Type.Array(DeviceSchema) },
      },
    },
    async (request) => devices.viewsFor(await access.accessFor(request.body.userId), request.body.ids),
  );

  app.put(
    '/api/devices/internal/statuses',
    {
      schema: {
        tags: TAGS,
        summary: 'Status, last update and latest position of devices, from tracking; answers the ids of those that exist (services only)',
        body: Type.Object({ changes: Type.Array(StatusChange, { minItems: 1, maxItems: INTERNAL_BATCH }) }),
        response: { 200: Type.Object({ deviceIds: Type.Array(Id) }) },
      },
    },
    async (request) => ({ deviceIds: await devices.updateStatuses(request.body.changes) }),
  );
}
