import { Type } from 'typebox';
import { IdParam, Nullable } from '../../../platform/http/schemas.ts';
import { IsoTime, QueryTime } from '../schemas.ts';

/** Request and response schemas of the report routes (DESIGN §5.9, docs/reports.md). */

const deviceIds = Type.Optional(
  Type.Array(IdParam, { maxItems: 100_000, description: 'Repeatable; none: every device you may see the report of (at most REPORT_MAX_DEVICES)' }),
);
const format = Type.Optional(
  Type.Union([Type.Literal('json'), Type.Literal('csv'), Type.Literal('xlsx')], { description: 'Overrides Accept: csv or xlsx downloads the same rows' }),
);

export const ReportQuery = Type.Object({ deviceId: deviceIds, from: QueryTime, to: QueryTime, format });

export const SummaryQuery = Type.Object({
  deviceId: deviceIds,
  from: QueryTime,
  to: QueryTime,
  daily: Type.Optional(
    Type.Union([Type.Literal('true'), Type.Literal('false'), Type.Literal('1'), Type.Literal('0')], {
      description: "One row per device and local day, days cut at midnight of your account's timezone",
    }),
  ),
  format,
});

const Metres = Type.Number({ description: 'Metres' });
const Knots = Type.Number({ description: 'Knots' });
const Ms = Type.Number({ description: 'Milliseconds' });
const Ongoing = Type.Boolean({ description: 'Still in progress: endTime is its latest position' });

export const TripSchema = Type.Object({
  deviceId: Type.Integer(),
  deviceName: Type.String(),
  startTime: IsoTime,
  endTime: IsoTime,
  duration: Ms,
  distance: Metres,
  averageSpeed: Knots,
  maxSpeed: Knots,
  startOdometer: Metres,
  endOdometer: Metres,
  startPositionId: Type.Integer(),
  endPositionId: Type.Integer(),
  startLat: Type.Number(),
  startLon: Type.Number(),
  endLat: Type.Number(),
  endLon: Type.Number(),
  startAddress: Nullable(Type.String()),
  endAddress: Nullable(Type.String()),
  spentFuel: Nullable(Type.Number()),
  driverUniqueId: Nullable(Type.String()),
  ongoing: Ongoing,
});

export const StopSchema = Type.Object({
  deviceId: Type.Integer(),
  deviceName: Type.String(),
  startTime: IsoTime,
  endTime: IsoTime,
  duration: Ms,
  positionId: Type.Integer(),
  lat: Type.Number(),
  lon: Type.Number(),
  address: Nullable(Type.String()),
  engineHours: Nullable(Ms),
  spentFuel: Nullable(Type.Number()),
  ongoing: Ongoing,
});

export const SummarySchema = Type.Object({
  deviceId: Type.Integer(),
  deviceName: Type.String(),
  startTime: IsoTime,
  endTime: IsoTime,
  distance: Metres,
  averageSpeed: Knots,
  maxSpeed: Knots,
  engineHours: Ms,
  spentFuel: Type.Number(),
  startOdometer: Metres,
  endOdometer: Metres,
});

export const GeofenceVisitSchema = Type.Object({
  deviceId: Type.Integer(),
  geofenceId: Type.Integer(),
  geofenceName: Nullable(Type.String()),
  enterTime: IsoTime,
  exitTime: Nullable(IsoTime),
  duration: Nullable(Ms),
});
