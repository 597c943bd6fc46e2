import type { GeofenceVisit, StopReport, SummaryReport, TripReport } from '../../../client/report-types.ts';
import type { UserDirectory } from '../../auth/users/directory.ts';
import type { Entitlement } from '../../billing/module.ts';
import type { DeviceAccessApi } from '../../devices/access.ts';
import { authorize } from '../../devices/access.ts';
import type { Permission } from '../../../platform/access-policy.ts';
import { AppError } from '../errors.ts';
import type { EventRow } from '../events/repository.ts';
import type { HistoryCut } from '../history-cut.ts';
import { storedFromRow } from '../ingest/rows.ts';
import type { PositionRow, TimeRange } from '../positions/repository.ts';
import { HISTORY_PAGE_SIZE } from '../positions/service.ts';
import { timeRange } from '../query.ts';
import type { TrackingStore } from '../store.ts';
import type { DeviceCursor, ReportQueryRepository, SpanRows, SpanTable, StopRow, TripRow } from './query-repository.ts';
import { hourOf, sumsOfRun } from './segmentation/machine.ts';
import type { SegmentationState, SegmentedPosition, Sums, SumsTrail } from './segmentation/machine.ts';
import { addUp, partsOf, periodsOf, sumsOfHours } from './summary.ts';
import type { Period } from './summary.ts';
import { ZoneClock, canonicalTimeZone } from './time-zone.ts';

const DAY_MS = 86_400_000;
/** Rows per page read from the database: memory stays bounded whatever the report's length. */
export const REPORT_PAGE_SIZE = 2_000;

export const REPORT_KINDS = ['trips', 'stops', 'summary', 'route', 'events', 'geofences'] as const;
export type ReportKind = (typeof REPORT_KINDS)[number];

/** What each report needs on every device it covers (the events and geofence visits are events). */
const PERMISSIONS: Record<ReportKind, readonly Permission[]> = {
  trips: ['position'],
  stops: ['position'],
  summary: ['position'],
  route: ['position'],
  events: ['position', 'events'],
  geofences: ['position', 'events'],
};

export interface ReportLimits {
  /** REPORT_MAX_DEVICES. */
  maxDevices: number;
  /** REPORT_MAX_DAYS. */
  maxDays: number;
}

export interface ReportQuery {
  /** None: every device the caller may see the report of. */
  deviceIds?: readonly number[] | undefined;
  /** ISO 8601 as received. */
  from: string;
  to: string;
  /** summary only: one row per device and local day. */
  daily?: boolean | undefined;
}

/** A report's devices and window, checked: everything a report reads is decided here, before the first row. */
export interface ReportScope {
  /** Ascending. */
  deviceIds: number[];
  range: TimeRange;
  /** Per device, the earliest time its owner's plan serves (null: all). */
  servedFrom: Map<number, number | null>;
  deviceNames: Map<number, string>;
  /** The caller's time zone (downloads and daily summaries). */
  clock: ZoneClock;
  daily: boolean;
}

/** A report row as the service builds it: the client's shape (DESIGN §5.9) with its times as epoch ms, written out by the views. */
type WithTimes<Row, K extends keyof Row> = Omit<Row, K> & { [P in K]: number | Extract<Row[P], null> };

export type TripReportRow = WithTimes<TripReport, 'startTime' | 'endTime'>;
export type StopReportRow = WithTimes<StopReport, 'startTime' | 'endTime'>;
export type SummaryReportRow = WithTimes<SummaryReport, 'startTime' | 'endTime'>;
export type GeofenceVisitRow = WithTimes<GeofenceVisit, 'enterTime' | 'exitTime'>;

/**
 * The report routes (DESIGN §5.9, docs/reports.md): reads what segmentation wrote and the positions
 * and events of a window. Every check (plan, devices, window) happens in scope(); the rows then come
 * page by page, so a download streams whatever its length.
 */
export class ReportService {
  private readonly store: TrackingStore;
  private readonly reports: ReportQueryRepository;
  private readonly devices: DeviceAccessApi;
  private readonly users: UserDirectory;
  private readonly historyCut: HistoryCut;
  private readonly plans: Entitlement | undefined;
  private readonly limits: ReportLimits;

  constructor(deps: {
    store: TrackingStore;
    reports: ReportQueryRepository;
    devices: DeviceAccessApi;
    users: UserDirectory;
    historyCut: HistoryCut;
    plans: Entitlement | undefined;
    limits: ReportLimits;
  }) {
    this.store = deps.store;
    this.reports = deps.reports;
    this.devices = deps.devices;
    this.users = deps.users;
    this.historyCut = deps.historyCut;
    this.plans = deps.plans;
    this.limits = deps.limits;
  }

  /**
   * Checks a report request: the window (400), the caller's plan includes reports (402 FEATURE_NOT_IN_PLAN), the devices (404 NOT_FOUND, 403 FORBIDDEN or PERMISSION_REQUIRED, 400 REPORT_TOO_MANY_DEVICES).
   */
  async scope(userId: number, request: object, kind: ReportKind, query: ReportQuery): Promise<ReportScope> {
    const range = timeRange(query.from, query.to);
    if (range.to - range.from > this.limits.maxDays * DAY_MS) {
      throw new AppError('REPORT_WINDOW_TOO_LONG', `A report covers at most ${this.limits.maxDays} days; narrow the window`, {
        details: [{ path: '/query/to', message: `must be at most ${this.limits.maxDays} days after from` }],
      });
    }
    await this.plans?.assertFeature(userId, 'reports');
    const permissions = PERMISSIONS[kind];
    const access = await this.devices.accessFor(userId, request);
    let deviceIds: number[];
    if (query.deviceIds === undefined) {
      const allowed = permissions.map((permission) => new Set(access.deviceIdsWith(permission)));
      deviceIds = [...(allowed[0] as Set<number>)].filter((deviceId) => allowed.every((set) => set.has(deviceId)));
    } else {
      deviceIds = [...new Set(query.deviceIds)].sort((a, b) => a - b);
    }
    if (deviceIds.length > this.limits.maxDevices) {
      const named = query.deviceIds === undefined ? 'The devices you may see are' : 'The devices named are';
      throw new AppError('REPORT_TOO_MANY_DEVICES', `${named} ${deviceIds.length}; a report covers at most ${this.limits.maxDevices}: name fewer with deviceId`, {
        details: [{ path: '/query/deviceId', message: `at most ${this.limits.maxDevices} devices` }],
      });
    }
    if (query.deviceIds !== undefined) {
      for (const deviceId of deviceIds) for (const permission of permissions) await authorize(access, access, deviceId, permission);
    }
    const [servedFrom, devices, user] = await Promise.all([this.historyCut.servedFrom(access, deviceIds), this.devices.getDevices(deviceIds), this.users.get(userId)]);
    const timeZone = (user?.timezone ? canonicalTimeZone(user.timezone) : undefined) ?? 'UTC';
    return {
      deviceIds,
      range,
      servedFrom,
      deviceNames: new Map(devices.map((device) => [device.id, device.name])),
      clock: new ZoneClock(timeZone),
      daily: kind === 'summary' && query.daily === true,
    };
  }

  private nameOf(scope: ReportScope, deviceId: number): string {
    return scope.deviceNames.get(deviceId) ?? `Device ${deviceId}`;
  }

  /** Whether a time lies within what the device's owner's plan serves. */
  private served(scope: ReportScope, deviceId: number, time: number): boolean {
    const from = scope.servedFrom.get(deviceId);
    return from === null || from === undefined || time >= from;
  }

  /**
   * The devices' spans (trips or stops) that overlap the window, whole, ascending by (device, start):
   * the one in progress at `from` (one index step back per device), then those starting inside.
   * A span starting before what the owner's plan serves is left out.
   */
  private async *spans<T extends SpanTable>(table: T, scope: ReportScope): AsyncGenerator<SpanRows[T][]> {
    const { range } = scope;
    const straddling = await this.reports.spansStartedBefore(table, scope.deviceIds, range.from);
    let next = 0;
    let cursor: DeviceCursor | undefined;
    for (;;) {
      const page = await this.reports.spanPage(table, scope.deviceIds, range, cursor, REPORT_PAGE_SIZE);
      const merged: SpanRows[T][] = [];
      for (const row of page) {
        // A device's span in progress at `from` comes before its spans starting inside the window.
        while (next < straddling.length && (straddling[next] as SpanRows[T]).device_id <= row.device_id) merged.push(straddling[next++] as SpanRows[T]);
        merged.push(row);
      }
      const last = page.at(-1);
      if (!last || page.length < REPORT_PAGE_SIZE) merged.push(...straddling.slice(next));
      const served = merged.filter((row) => this.served(scope, row.device_id, row.start_time));
      if (served.length > 0) yield served;
      if (!last || page.length < REPORT_PAGE_SIZE) return;
      cursor = { deviceId: last.device_id, time: last.start_time, id: last.id };
    }
  }

  async *trips(scope: ReportScope): AsyncGenerator<TripReportRow[]> {
    for await (const page of this.spans('trips', scope)) yield page.map((row) => this.tripRow(scope, row));
  }

  /** The fields every span's row starts with. */
  private spanRow(scope: ReportScope, row: TripRow | StopRow) {
    return { deviceId: row.device_id, deviceName: this.nameOf(scope, row.device_id), startTime: row.start_time, endTime: row.end_time, duration: row.end_time - row.start_time };
  }

  private tripRow(scope: ReportScope, row: TripRow): TripReportRow {
    return {
      ...this.spanRow(scope, row),
      distance: row.distance,
      averageSpeed: row.average_speed,
      maxSpeed: row.max_speed,
      startOdometer: row.start_odometer,
      endOdometer: row.end_odometer,
      startPositionId: row.start_position_id,
      endPositionId: row.end_position_id,
      startLat: row.start_lat,
      startLon: row.start_lon,
      endLat: row.end_lat,
      endLon: row.end_lon,
      startAddress: row.start_address,
      endAddress: row.end_address,
      spentFuel: row.spent_fuel,
      driverUniqueId: row.driver_unique_id,
      ongoing: row.ongoing === 1,
    };
  }

  async *stops(scope: ReportScope): AsyncGenerator<StopReportRow[]> {
    for await (const page of this.spans('stops', scope)) yield page.map((row) => this.stopRow(scope, row));
  }

  private stopRow(scope: ReportScope, row: StopRow): StopReportRow {
    return {
      ...this.spanRow(scope, row),
      positionId: row.position_id,
      lat: row.lat,
      lon: row.lon,
      address: row.address,
      engineHours: row.engine_hours,
      spentFuel: row.spent_fuel,
      ongoing: row.ongoing === 1,
    };
  }

  /**
   * One row per device (per device and local day with `daily`) that has positions in the window: the
   * whole UTC hours from summary_hours, the partial hours at the edges from their positions (so a
   * summary costs what it returns). Devices whose owners' plans serve different windows are read apart.
   */
  async *summary(scope: ReportScope): AsyncGenerator<SummaryReportRow[]> {
    const rows: SummaryReportRow[] = [];
    for (const [from, deviceIds] of this.groupByServedStart(scope)) {
      const window = { from, to: scope.range.to };
      const periods = periodsOf(window, scope.daily ? scope.clock.dayStartsBetween(window.from, window.to) : []);
      const parts = periods.map(partsOf);
      const hours = new Map<string, Sums>();
      for (const row of await this.reports.hourSums(deviceIds, parts.map((part) => part.hours))) hours.set(`${row.device_id}:${row.bucket}`, sumsOfHours(row));
      // The step into a window's first position counts, as it does in summary_hours, unless it comes from beyond the plan's cut.
      const since = from > scope.range.from ? from : Number.MIN_SAFE_INTEGER;
      const edges = new Map<string, Sums>();
      for (const edge of new Map(parts.flatMap((part) => part.edges).map((edge) => [edge.from, edge])).values()) {
        for (const [deviceId, sums] of await this.edgeSums(deviceIds, edge, since)) edges.set(`${deviceId}:${edge.from}`, sums);
      }
      for (const deviceId of deviceIds) {
        parts.forEach((part, index) => {
          const edgeSums = (edge: Period) => edges.get(`${deviceId}:${edge.from}`);
          // In time order: the partial hour before the whole hours, the whole hours, the partial hour after.
          const before = part.edges.filter((edge) => edge.from < part.hours.start).map(edgeSums);
          const after = part.edges.filter((edge) => edge.from >= part.hours.start).map(edgeSums);
          const total = addUp([...before, hours.get(`${deviceId}:${index}`), ...after]);
          if (total) rows.push(this.summaryRow(scope, deviceId, total));
        });
      }
    }
    rows.sort((a, b) => a.deviceId - b.deviceId || a.startTime - b.startTime);
    for (let start = 0; start < rows.length; start += REPORT_PAGE_SIZE) yield rows.slice(start, start + REPORT_PAGE_SIZE);
  }

  /**
   * Per device, the sums of its positions in one partial hour, by the segmentation's rule: the machine's trail before
   * the edge is replayed from its last checkpoint (the state before that hour's first position), so the first step
   * and the readings carried from earlier positions are those summary_hours counted.
   */
  private async edgeSums(deviceIds: readonly number[], edge: Period, since: number): Promise<Map<number, Sums>> {
    const inEdge = byDevice(await this.reports.positionsIn(deviceIds, edge));
    const present = [...inEdge.keys()];
    const checkpoints = new Map((await this.reports.checkpointsBefore(present, edge.from)).map((row) => [row.device_id, row]));
    // Without a checkpoint (segmentation has not reached the device's positions before the edge yet) the trail starts at
    // its last position before the edge's hour: the first step still counts, readings it did not report are unknown.
    const hourStart = hourOf(edge.from);
    const unsegmented = present.filter((deviceId) => !checkpoints.has(deviceId));
    const lastBefore = new Map((await this.reports.positionsBefore(unsegmented, hourStart)).map((row) => [row.device_id, { fixTime: row.fix_time, id: row.id }]));
    const starts = present.map((deviceId) => {
      const checkpoint = checkpoints.get(deviceId);
      return { deviceId, from: checkpoint ? { fixTime: checkpoint.fix_time, id: checkpoint.position_id } : (lastBefore.get(deviceId) ?? { fixTime: hourStart, id: 0 }) };
    });
    const lead = byDevice(await this.reports.positionsBetween(starts, edge.from));
    const sums = new Map<number, Sums>();
    for (const [deviceId, rows] of inEdge) {
      const checkpoint = checkpoints.get(deviceId);
      const state: SumsTrail = checkpoint ? (JSON.parse(checkpoint.state) as SegmentationState) : { last: null, lastFix: null };
      const { trail } = sumsOfRun(state, (lead.get(deviceId) ?? []).map(segmentedOf));
      const total = sumsOfRun(trail, rows.map(segmentedOf), since).sums;
      if (total) sums.set(deviceId, total);
    }
    return sums;
  }

  private summaryRow(scope: ReportScope, deviceId: number, sums: Sums): SummaryReportRow {
    return {
      deviceId,
      deviceName: this.nameOf(scope, deviceId),
      startTime: sums.firstTime,
      endTime: sums.lastTime,
      distance: sums.distance,
      averageSpeed: sums.positions > 0 ? sums.speedSum / sums.positions : 0,
      maxSpeed: sums.maxSpeed,
      engineHours: sums.engineHours,
      spentFuel: sums.spentFuel,
      startOdometer: sums.startOdometer,
      endOdometer: sums.endOdometer,
    };
  }

  /** The devices grouped by where their served window starts (the window's from, or later by the plan's cut). */
  private groupByServedStart(scope: ReportScope): Map<number, number[]> {
    const groups = new Map<number, number[]>();
    for (const deviceId of scope.deviceIds) {
      const start = Math.max(scope.range.from, scope.servedFrom.get(deviceId) ?? scope.range.from);
      if (start > scope.range.to) continue;
      let group = groups.get(start);
      if (!group) groups.set(start, (group = []));
      group.push(deviceId);
    }
    return groups;
  }

  /** The devices' positions in the window, device after device, each in (fixTime, id) order. */
  async *route(scope: ReportScope): AsyncGenerator<PositionRow[]> {
    for (const [from, deviceIds] of this.groupByServedStart(scope)) {
      for (const deviceId of deviceIds) {
        const range = { from, to: scope.range.to };
        let page = await this.store.positions.historyPage(deviceId, range, undefined, HISTORY_PAGE_SIZE);
        for (;;) {
          if (page.length > 0) yield page;
          const last = page.at(-1);
          if (!last || page.length < HISTORY_PAGE_SIZE) break;
          page = await this.store.positions.historyPage(deviceId, range, { fixTime: last.fix_time, id: last.id }, HISTORY_PAGE_SIZE);
        }
      }
    }
  }

  /** The devices' events of these types (none: all) in the window, ascending by (device, eventTime). */
  async *events(scope: ReportScope, types: readonly string[] = []): AsyncGenerator<EventRow[]> {
    let cursor: DeviceCursor | undefined;
    for (;;) {
      const page = await this.reports.eventPage(scope.deviceIds, scope.range, types, cursor, REPORT_PAGE_SIZE);
      const served = page.filter((row) => this.served(scope, row.device_id, row.event_time));
      if (served.length > 0) yield served;
      const last = page.at(-1);
      if (!last || page.length < REPORT_PAGE_SIZE) return;
      cursor = { deviceId: last.device_id, time: last.event_time, id: last.id };
    }
  }

  /**
   * Geofence visits that overlap the window, whole: each geofenceEnter paired with the device's next
   * geofenceExit of that geofence. An exit inside the window whose enter came before it looks the
   * enter up; an enter whose exit is after the window looks the exit up; a visit under way at `from`
   * is found by its enter before (one query for the devices), with or without an event inside; a
   * device still inside has no exit. Ascending by (device, enterTime).
   */
  async *geofences(scope: ReportScope): AsyncGenerator<GeofenceVisitRow[]> {
    const openAtFrom = await this.geofenceEntersOpenAt(scope);
    // Devices with a visit under way at `from` but no geofence event in the window, yielded in device order.
    const quiet = [...openAtFrom.keys()].sort((a, b) => a - b);
    const visitsOf = (deviceId: number, events: readonly EventRow[]) => this.visitsOf(scope, deviceId, events, openAtFrom.get(deviceId) ?? []);
    let deviceId: number | undefined;
    let deviceEvents: EventRow[] = [];
    for await (const page of this.events(scope, ['geofenceEnter', 'geofenceExit'])) {
      for (const row of page) {
        if (row.geofence_id === null) continue;
        if (row.device_id !== deviceId) {
          if (deviceId !== undefined) {
            const visits = await visitsOf(deviceId, deviceEvents);
            if (visits.length > 0) yield visits;
            deviceEvents = [];
          }
          while (quiet[0] !== undefined && quiet[0] <= row.device_id) {
            const quietId = quiet.shift() as number;
            if (quietId < row.device_id) yield await visitsOf(quietId, []);
          }
        }
        deviceId = row.device_id;
        deviceEvents.push(row);
      }
    }
    if (deviceId !== undefined) {
      const visits = await visitsOf(deviceId, deviceEvents);
      if (visits.length > 0) yield visits;
    }
    for (const quietId of quiet) yield await visitsOf(quietId, []);
  }

  /** Per device, the geofenceEnters of the visits under way at the window's start (not before the plan's cut). */
  private async geofenceEntersOpenAt(scope: ReportScope): Promise<Map<number, EventRow[]>> {
    const bySince = new Map<number, number[]>();
    for (const deviceId of scope.deviceIds) {
      const since = scope.servedFrom.get(deviceId) ?? Number.MIN_SAFE_INTEGER;
      bySince.set(since, [...(bySince.get(since) ?? []), deviceId]);
    }
    const enters = new Map<number, EventRow[]>();
    for (const [since, deviceIds] of bySince) {
      for (const enter of await this.reports.geofenceEntersOpenAt(deviceIds, scope.range.from, since)) {
        enters.set(enter.device_id, [...(enters.get(enter.device_id) ?? []), enter]);
      }
    }
    return enters;
  }

  /** The device's visits from its geofence events in the window and the enters of its visits under way at `from`. */
  private async visitsOf(scope: ReportScope, deviceId: number, events: readonly EventRow[], openAtFrom: readonly EventRow[]): Promise<GeofenceVisitRow[]> {
    const since = scope.servedFrom.get(deviceId) ?? Number.MIN_SAFE_INTEGER;
    const open = new Map<number, EventRow>(openAtFrom.map((enter) => [enter.geofence_id as number, enter]));
    const pairs: { geofenceId: number; enter: EventRow; exit: EventRow | undefined }[] = [];
    for (const event of events) {
      const geofenceId = event.geofence_id as number;
      if (event.type === 'geofenceEnter') {
        const unmatched = open.get(geofenceId);
        // Two enters in a row: the exit between them was never recorded.
        if (unmatched) pairs.push({ geofenceId, enter: unmatched, exit: undefined });
        open.set(geofenceId, event);
        continue;
      }
      const enter = open.get(geofenceId) ?? (await this.reports.nearestGeofenceEvent(deviceId, geofenceId, 'geofenceEnter', scope.range.from, 'before', since));
      open.delete(geofenceId);
      if (enter) pairs.push({ geofenceId, enter, exit: event });
    }
    for (const [geofenceId, enter] of open) {
      pairs.push({ geofenceId, enter, exit: await this.reports.nearestGeofenceEvent(deviceId, geofenceId, 'geofenceExit', scope.range.to, 'after', Number.MAX_SAFE_INTEGER) });
    }
    const names = await this.reports.geofenceNames([...new Set(pairs.map((pair) => pair.geofenceId))]);
    return pairs
      .map(({ geofenceId, enter, exit }) => ({
        deviceId,
        geofenceId,
        geofenceName: names.get(geofenceId) ?? null,
        enterTime: enter.event_time,
        exitTime: exit?.event_time ?? null,
        duration: exit ? exit.event_time - enter.event_time : null,
      }))
      .sort((a, b) => a.enterTime - b.enterTime || a.geofenceId - b.geofenceId);
  }
}

/** Rows grouped by device, in their order. */
function byDevice(rows: readonly PositionRow[]): Map<number, PositionRow[]> {
  const groups = new Map<number, PositionRow[]>();
  for (const row of rows) {
    let list = groups.get(row.device_id);
    if (!list) groups.set(row.device_id, (list = []));
    list.push(row);
  }
  return groups;
}

function segmentedOf(row: PositionRow): SegmentedPosition {
  return storedFromRow(row) as SegmentedPosition;
}
