import { Type } from 'typebox';
import { AttributesInput, IdParam, Nullable } from '../../platform/http/schemas.ts';
import { EVENT_TYPES } from './events/types.ts';
import { MAX_AREA_TEXT_LENGTH } from './geo/index.ts';

/** Request and response schemas of the tracking routes (validation, serialisation and /openapi.json). */


const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
export const IsoTime = Type.String({ format: 'date-time' });
/** A bound of a time range in a query: ISO 8601 with a time zone (RFC 3339). */
export const QueryTime = Type.String({ format: 'date-time', maxLength: 64, description: 'ISO 8601 date-time with time zone, inclusive' });
const AnyObject = Type.Record(Type.String(), Type.Unknown());

export const PositionSchema = Type.Object({
  id: Type.Integer(),
  deviceId: Type.Integer(),
  protocol: Nullable(Type.String()),
  serverTime: Nullable(IsoTime),
  deviceTime: Nullable(IsoTime),
  fixTime: Nullable(IsoTime),
  valid: Type.Boolean(),
  latitude: Type.Number(),
  longitude: Type.Number(),
  altitude: Type.Number({ description: 'Metres' }),
  speed: Type.Number({ description: 'Knots' }),
  course: Type.Number({ description: 'Degrees' }),
  accuracy: Type.Number({ description: 'Metres' }),
  address: Nullable(Type.String()),
  attributes: AnyObject,
});

export const PositionQuery = Type.Object({
  deviceId: Type.Optional(IdParam),
  id: Type.Optional(Type.Array(IdParam, { maxItems: 100, description: 'Repeatable: positions by id' })),
  from: Type.Optional(QueryTime),
  to: Type.Optional(QueryTime),
});

export const PositionDeleteQuery = Type.Object({ deviceId: IdParam, from: QueryTime, to: QueryTime });

export const EventTypeSchema = Type.Union(EVENT_TYPES.map((type) => Type.Literal(type)));

export const EventSchema = Type.Object({
  id: Type.Integer(),
  type: Type.String(),
  eventTime: Nullable(IsoTime),
  deviceId: Type.Integer(),
  positionId: Nullable(Type.Integer()),
  geofenceId: Nullable(Type.Integer()),
  maintenanceId: Nullable(Type.Integer()),
  attributes: AnyObject,
});

export const EventQuery = Type.Object({
  deviceId: Type.Optional(IdParam),
  from: Type.Optional(QueryTime),
  to: Type.Optional(QueryTime),
  type: Type.Optional(Type.Array(EventTypeSchema, { maxItems: EVENT_TYPES.length, description: 'Repeatable: any of these event types' })),
});

export const IdParams = Type.Object({ id: IdParam });

/** Text with at least one visible character. */
const Text = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '\\S' });
/** No minLength: an empty area is an area error (INVALID_AREA, DESIGN §5.4), which the parser reports. */
const AreaText = Type.String({
  maxLength: MAX_AREA_TEXT_LENGTH,
  description: 'CIRCLE (lat lon, radius_m) | POLYGON ((lat lon, …, lat lon)) closed | LINESTRING (lat lon, lat lon, …)',
});

export const GeofenceSchema = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  description: Nullable(Type.String()),
  area: Type.String({ description: 'Normalised area text' }),
  calendarId: Nullable(Type.Integer()),
  attributes: AnyObject,
});

const GeofenceOptionalFields = {
  description: Type.Optional(Nullable(Type.String({ maxLength: 512 }))),
  calendarId: Type.Optional(Nullable(Id)),
  attributes: Type.Optional(AttributesInput('Free-form settings; polylineDistance is the LINESTRING buffer in metres (default 25)')),
};

export const GeofenceCreateRequest = Type.Object({ name: Text(128), area: AreaText, ...GeofenceOptionalFields }, { additionalProperties: false });

export const GeofenceUpdateRequest = Type.Object(
  { name: Type.Optional(Text(128)), area: Type.Optional(AreaText), ...GeofenceOptionalFields },
  { additionalProperties: false, minProperties: 1 },
);

export const GeofenceListQuery = Type.Object({
  userId: Type.Optional(IdParam),
  all: Type.Optional(
    Type.Union([Type.Literal('true'), Type.Literal('false'), Type.Literal('1'), Type.Literal('0')], {
      description: 'Every geofence the user may see: also those applying to devices shared with the geofences permission (administrators: all)',
    }),
  ),
});
