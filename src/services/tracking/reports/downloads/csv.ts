import { csvText } from '../../positions/formats.ts';
import type { CellValue, Column, ReportTable } from './table.ts';
import { headerOf } from './table.ts';
import type { ZoneClock } from '../time-zone.ts';

function csvCell(column: Column<unknown>, value: CellValue, clock: ZoneClock): string {
  if (value === null) return '';
  if (column.kind === 'time') return clock.isoTime(value as number);
  return typeof value === 'string' ? csvText(value) : String(value);
}

/** RFC 4180 CSV with a header row, page by page; times ISO 8601 with the caller's offset. */
export async function* csvReport<Row>(table: ReportTable<Row>): AsyncGenerator<string> {
  const columns = table.columns as readonly Column<unknown>[];
  yield `${columns.map((column) => csvText(headerOf(column, table.clock))).join(',')}\r\n`;
  for await (const page of table.pages) {
    let text = '';
    for (const row of page) text += `${columns.map((column) => csvCell(column, column.value(row), table.clock)).join(',')}\r\n`;
    yield text;
  }
}
