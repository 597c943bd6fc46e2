import type { ZoneClock } from '../time-zone.ts';

/** What a cell holds: a time (epoch ms, shown in the caller's zone), a number, text, a flag, or nothing. */
export type CellKind = 'time' | 'number' | 'text' | 'boolean';
export type CellValue = number | string | boolean | null;

/** One column of a download: the field of the JSON row, its unit (in the header) and how to read it from a row. */
export interface Column<Row> {
  field: string;
  kind: CellKind;
  unit?: string;
  value(row: Row): CellValue;
}

/** A report as rows in pages, with the columns a download writes them in. */
export interface ReportTable<Row> {
  /** The file name's stem, e.g. trips. */
  name: string;
  columns: readonly Column<Row>[];
  pages: AsyncIterable<Row[]>;
  /** The caller's zone: the times of a download are written in it. */
  clock: ZoneClock;
}

/** The header of a column: its field, and its unit or, for a time, the zone it is written in. */
export function headerOf(column: Column<unknown>, clock: ZoneClock): string {
  const unit = column.kind === 'time' ? clock.timeZone : column.unit;
  return unit === undefined ? column.field : `${column.field} (${unit})`;
}

/** Columns read straight from a row's fields of the same name. */
export function fieldColumns<Row>(specs: readonly [field: keyof Row & string, kind: CellKind, unit?: string][]): Column<Row>[] {
  return specs.map(([field, kind, unit]) => ({
    field,
    kind,
    ...(unit === undefined ? {} : { unit }),
    value: (row: Row) => row[field] as CellValue,
  }));
}
