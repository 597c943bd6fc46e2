import { Readable } from 'node:stream';
import { Type } from 'typebox';
import type { TSchema } from 'typebox';
import type { FastifyReply } from 'fastify';
import type { HttpApp } from '../../../platform/http/app.ts';
import { requireIdentity } from '../../../platform/http/identity.ts';
import { errorResponses } from '../../../platform/http/schemas.ts';
import { JSON_TYPES, preferredMediaFormat } from '../positions/formats.ts';
import { EventSchema, PositionSchema } from '../schemas.ts';
import { csvReport } from './downloads/csv.ts';
import type { ReportTable } from './downloads/table.ts';
import { xlsxReport } from './downloads/xlsx.ts';
import { GeofenceVisitSchema, ReportQuery, StopSchema, SummaryQuery, SummarySchema, TripSchema } from './schemas.ts';
import type { ReportKind, ReportScope, ReportService } from './service.ts';
import { EVENT_VIEW, GEOFENCE_VISIT_VIEW, ROUTE_VIEW, STOP_VIEW, SUMMARY_VIEW, TRIP_VIEW } from './views.ts';
import type { ReportView } from './views.ts';

const TAGS = ['reports'];

export const XLSX_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
type ReportFormat = 'json' | 'csv' | 'xlsx';
const REPORT_TYPES: Readonly<Record<string, ReportFormat>> = { ...JSON_TYPES, 'text/csv': 'csv', [XLSX_TYPE]: 'xlsx' };
const MEDIA_TYPES: Record<ReportFormat, string> = { json: 'application/json; charset=utf-8', csv: 'text/csv; charset=utf-8', xlsx: XLSX_TYPE };

/** A JSON array written page by page. */
async function* jsonReport<Row>(pages: AsyncIterable<Row[]>, json: (row: Row) => string): AsyncGenerator<string> {
  let separator = '';
  yield '[';
  for await (const page of pages) {
    if (page.length === 0) continue;
    let text = '';
    for (const row of page) {
      text += separator + json(row);
      separator = ',';
    }
    yield text;
  }
  yield ']';
}

/** Streams a report in the format asked for (`format`, else Accept); one page in flight at a time. */
function sendReport<Row>(reply: FastifyReply, format: ReportFormat, view: ReportView<Row>, table: ReportTable<Row>): FastifyReply {
  reply.header('vary', 'Accept').type(MEDIA_TYPES[format]);
  if (format !== 'json') reply.header('content-disposition', `attachment; filename="${table.name}.${format}"`);
  const body = format === 'csv' ? csvReport(table) : format === 'xlsx' ? xlsxReport(table) : jsonReport(table.pages, view.json);
  // Fastify pipes a stream as it is (the schema documents what it carries), hence the cast.
  return reply.send(Readable.from(body, { highWaterMark: 1 }) as never);
}

function responses(rowSchema: TSchema, description: string) {
  return {
    200: {
      description,
      content: {
        'application/json': { schema: Type.Array(rowSchema) },
        'text/csv': { schema: Type.String({ description: 'The same rows as CSV: a header row naming fields and units, times in your timezone' }) },
        [XLSX_TYPE]: { schema: Type.String({ format: 'binary', description: 'The same rows as an XLSX workbook of one sheet' }) },
      },
    },
    ...errorResponses(400, 401, 402, 403, 404, 502),
  };
}

const COMMON =
  'deviceId is repeatable (none: every device you may see, at most REPORT_MAX_DEVICES); from and to are inclusive, at most REPORT_MAX_DAYS apart. ' +
  'Accept: text/csv or the XLSX media type (or format=csv|xlsx) downloads the same rows. 402 FEATURE_NOT_IN_PLAN when your plan has no reports.';

interface ReportRoute<Row> {
  kind: ReportKind;
  summary: string;
  rowSchema: TSchema;
  view: ReportView<Row>;
  rows(scope: ReportScope): AsyncIterable<Row[]>;
}

export function registerReportRoutes(app: HttpApp, reports: ReportService): void {
  const register = <Row>(route: ReportRoute<Row>) =>
    app.get(
      `/api/reports/${route.kind}`,
      {
        schema: { tags: TAGS, summary: route.summary, description: COMMON, querystring: ReportQuery, response: responses(route.rowSchema, route.summary) },
      },
      async (request, reply) => {
        const { deviceId, from, to } = request.query;
        const scope = await reports.scope(requireIdentity(request).userId, request, route.kind, { deviceIds: deviceId, from, to });
        const format = request.query.format ?? preferredMediaFormat(request.headers.accept, REPORT_TYPES, 'json');
        return sendReport(reply, format, route.view, { name: route.kind, columns: route.view.columns, pages: route.rows(scope), clock: scope.clock });
      },
    );

  register({ kind: 'trips', summary: 'Trips overlapping the window, whole, by device and start', rowSchema: TripSchema, view: TRIP_VIEW, rows: (scope) => reports.trips(scope) });
  register({ kind: 'stops', summary: 'Stops overlapping the window, whole, by device and start', rowSchema: StopSchema, view: STOP_VIEW, rows: (scope) => reports.stops(scope) });
  register({ kind: 'route', summary: "The devices' positions in the window, device after device", rowSchema: PositionSchema, view: ROUTE_VIEW, rows: (scope) => reports.route(scope) });
  register({
    kind: 'events',
    summary: "The devices' events in the window, by device and time (needs the events permission too)",
    rowSchema: EventSchema,
    view: EVENT_VIEW,
    rows: (scope) => reports.events(scope),
  });
  register({
    kind: 'geofences',
    summary: 'Geofence visits (enter paired with exit) overlapping the window, whole (needs the events permission too)',
    rowSchema: GeofenceVisitSchema,
    view: GEOFENCE_VISIT_VIEW,
    rows: (scope) => reports.geofences(scope),
  });

  app.get(
    '/api/reports/summary',
    {
      schema: {
        tags: TAGS,
        summary: 'Distance, speeds, engine hours and fuel per device over the window (daily=true: per device and local day)',
        description: `${COMMON} daily=true cuts the window at local midnight of your account's timezone (UTC when unset).`,
        querystring: SummaryQuery,
        response: responses(SummarySchema, 'One row per device (and day) with positions in the window'),
      },
    },
    async (request, reply) => {
      const { deviceId, from, to, daily } = request.query;
      const scope = await reports.scope(requireIdentity(request).userId, request, 'summary', { deviceIds: deviceId, from, to, daily: daily === 'true' || daily === '1' });
      const format = request.query.format ?? preferredMediaFormat(request.headers.accept, REPORT_TYPES, 'json');
      return sendReport(reply, format, SUMMARY_VIEW, { name: 'summary', columns: SUMMARY_VIEW.columns, pages: reports.summary(scope), clock: scope.clock });
    },
  );
}
