import { Type } from 'typebox';
import { AttributesInput, DecimalInteger, IdParam, Nullable } from '../../platform/http/schemas.ts';
import { MAX_UNIQUE_ID_LENGTH } from './access.ts';

/** Request and response schemas of the device routes (validation, serialisation and /openapi.json). */


/** Text with at least one visible character. */
const Text = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '\\S' });
/** Identifiers as devices send them: printable ASCII without spaces. */
const Identifier = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '^[\\x21-\\x7E]+$' });

const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
const IsoTime = Type.String({ format: 'date-time' });

export const UniqueId = Identifier(MAX_UNIQUE_ID_LENGTH);
/** Claim tokens are typed by people: case, dashes and spaces are ignored, so allow a little slack. */
export const ClaimTokenInput = Type.String({ maxLength: 64 });

export const PermissionsSchema = Type.Object(
  {
    position: Type.Boolean({ description: 'View positions and history' }),
    events: Type.Boolean({ description: 'View device events' }),
    geofences: Type.Boolean({ description: 'View geofences' }),
    notifications: Type.Boolean({ description: 'Receive notifications' }),
    commands: Type.Boolean({ description: 'Send commands to the device' }),
  },
  { additionalProperties: false },
);

/** In requests every flag is optional: missing means false on create, unchanged on update. */
export const PermissionsInput = Type.Partial(PermissionsSchema, { additionalProperties: false });

export const DeviceStatus = Type.Union([Type.Literal('online'), Type.Literal('offline'), Type.Literal('unknown')]);

/** A device's own fields, with its times as `time` shows them (ISO text to clients, epoch ms between services). */
export function deviceFields<Time extends typeof IsoTime | ReturnType<typeof Type.Integer>>(time: Time) {
  return {
    id: Type.Integer(),
    name: Type.String(),
    uniqueId: Type.String(),
    status: DeviceStatus,
    lastUpdate: Nullable(time),
    positionId: Nullable(Type.Integer()),
    phone: Nullable(Type.String()),
    model: Nullable(Type.String()),
    contact: Nullable(Type.String()),
    category: Nullable(Type.String()),
    disabled: Type.Boolean(),
    expirationTime: Nullable(time),
    groupId: Nullable(Type.Integer()),
    calendarId: Nullable(Type.Integer()),
    attributes: Type.Record(Type.String(), Type.Unknown()),
  };
}

export const DeviceSchema = Type.Object({
  ...deviceFields(IsoTime),
  claimToken: Type.Optional(Type.String({ description: 'Only for claimed devices, only for the owner' })),
  isOwner: Type.Boolean(),
  permissions: PermissionsSchema,
  sharedBy: Type.Optional(Type.Integer({ description: 'Who shared the device; only for non-owners' })),
});

const OptionalFields = {
  phone: Type.Optional(Nullable(Text(64))),
  model: Type.Optional(Nullable(Text(128))),
  contact: Type.Optional(Nullable(Text(512))),
  category: Type.Optional(Nullable(Text(64))),
  groupId: Type.Optional(Nullable(Id)),
  attributes: Type.Optional(AttributesInput()),
};

export const DeviceCreateRequest = Type.Object(
  {
    name: Text(128),
    uniqueId: UniqueId,
    ...OptionalFields,
    deviceToken: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'A claim token: the device is created claimed' })),
  },
  { additionalProperties: false },
);

export const DeviceUpdateRequest = Type.Object(
  { name: Type.Optional(Text(128)), ...OptionalFields, disabled: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);

export const DeviceListQuery = Type.Object({
  userId: Type.Optional(IdParam),
  uniqueId: Type.Optional(Type.Array(UniqueId, { maxItems: 100 })),
  id: Type.Optional(Type.Array(IdParam, { maxItems: 100 })),
});

export const DeviceParams = Type.Object({ id: IdParam });
export const ShareParams = Type.Object({ id: IdParam, userId: IdParam });

export const ShareSchema = Type.Object({
  deviceId: Type.Integer(),
  userId: Nullable(Type.Integer({ description: 'Null while no account has the address (pending), and in the answer to POST' })),
  email: Type.String(),
  name: Nullable(Type.String({ description: "The user's name; null with userId" })),
  permissions: PermissionsSchema,
  sharedBy: Type.Integer(),
  createdAt: IsoTime,
  updatedAt: IsoTime,
});

export const ShareCreateRequest = Type.Object(
  { email: Type.String({ minLength: 3, maxLength: 254, format: 'email' }), permissions: PermissionsInput },
  { additionalProperties: false },
);

export const ShareWithdrawQuery = Type.Object({ email: Type.String({ minLength: 3, maxLength: 254, format: 'email' }) });

export const ShareUpdateRequest = Type.Object({ permissions: PermissionsInput }, { additionalProperties: false });

export const TokenValidateRequest = Type.Object({ token: Type.Optional(ClaimTokenInput) }, { additionalProperties: false });

export const TokenValidateResponse = Type.Union([
  Type.Object({ success: Type.Literal(true), uniqueId: Type.String(), model: Type.String(), modelCode: Type.String() }),
  Type.Object({
    success: Type.Literal(false),
    errorCode: Type.Union([Type.Literal('TOKEN_REQUIRED'), Type.Literal('TOKEN_INVALID'), Type.Literal('TOKEN_ALREADY_CLAIMED')]),
    errorMessage: Type.String(),
  }),
]);

export const DeviceClaimRequest = Type.Object({ token: Type.Optional(ClaimTokenInput) }, { additionalProperties: false });

export const DeviceClaimResponse = Type.Object({
  success: Type.Boolean(),
  device: Type.Optional(DeviceSchema),
  alreadyClaimed: Type.Optional(Type.Boolean()),
});

const ClaimTokenStatus = Type.Union([Type.Literal('unclaimed'), Type.Literal('claimed'), Type.Literal('revoked')]);
const ModelCode = Identifier(64);
const ModelName = Text(128);

export const ClaimTokenSchema = Type.Object({
  token: Type.String({ description: 'XXXX-XXXX-XXXX' }),
  uniqueId: Nullable(Type.String()),
  modelCode: Type.String(),
  model: Type.String({ description: 'Display name: modelName, else modelCode' }),
  status: ClaimTokenStatus,
  claimedBy: Nullable(Type.Integer()),
  claimedAt: Nullable(IsoTime),
  createdAt: IsoTime,
});

const Transfer = Type.Optional(
  Type.Boolean({ description: 'The uniqueId is registered to a device already: let the claim take it from its owner, ending its shares' }),
);

export const ClaimTokenCreateRequest = Type.Object(
  { uniqueId: Type.Optional(Nullable(UniqueId)), modelCode: ModelCode, modelName: Type.Optional(Nullable(ModelName)), transfer: Transfer },
  { additionalProperties: false },
);

export const ClaimTokenUpdateRequest = Type.Object(
  {
    uniqueId: Type.Optional(Nullable(UniqueId)),
    modelCode: Type.Optional(ModelCode),
    modelName: Type.Optional(Nullable(ModelName)),
    transfer: Transfer,
  },
  { additionalProperties: false, minProperties: 1 },
);

export const ClaimTokenParams = Type.Object({ token: ClaimTokenInput });

export const ClaimTokenListQuery = Type.Object({
  status: Type.Optional(ClaimTokenStatus),
  uniqueId: Type.Optional(UniqueId),
  limit: Type.Optional(DecimalInteger({ minimum: 1, maximum: 1000 }, { default: 100 })),
  offset: Type.Optional(DecimalInteger({ minimum: 0, maximum: 1_000_000_000 }, { default: 0 })),
});

