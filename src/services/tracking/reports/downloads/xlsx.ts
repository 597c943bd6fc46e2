import { Zip, ZipDeflate } from 'fflate';
import type { CellValue, Column, ReportTable } from './table.ts';
import { headerOf } from './table.ts';
import type { ZoneClock } from '../time-zone.ts';

/**
 * An Office Open XML workbook of one sheet, streamed: the sheet's XML is deflated page by page into
 * the zip as rows arrive, so memory holds one page whatever the report's length (docs/reports.md,
 * "Downloads", says why these few parts are written here rather than by a spreadsheet library).
 */

const XML_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
const MAIN = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const RELATIONSHIPS = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const PACKAGE_RELATIONSHIPS = 'http://schemas.openxmlformats.org/package/2006/relationships';

const STATIC_PARTS: readonly [path: string, xml: string][] = [
  [
    '[Content_Types].xml',
    `${XML_HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
      '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
      '<Default Extension="xml" ContentType="application/xml"/>' +
      '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>' +
      '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>' +
      '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>' +
      '</Types>',
  ],
  [
    '_rels/.rels',
    `${XML_HEAD}<Relationships xmlns="${PACKAGE_RELATIONSHIPS}">` +
      `<Relationship Id="rId1" Type="${RELATIONSHIPS}/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
  ],
  [
    'xl/_rels/workbook.xml.rels',
    `${XML_HEAD}<Relationships xmlns="${PACKAGE_RELATIONSHIPS}">` +
      `<Relationship Id="rId1" Type="${RELATIONSHIPS}/worksheet" Target="worksheets/sheet1.xml"/>` +
      `<Relationship Id="rId2" Type="${RELATIONSHIPS}/styles" Target="styles.xml"/></Relationships>`,
  ],
  [
    'xl/styles.xml',
    // Style 1: a date and time, as the cells of time columns carry.
    `${XML_HEAD}<styleSheet xmlns="${MAIN}"><numFmts count="1"><numFmt numFmtId="164" formatCode="yyyy-mm-dd hh:mm:ss"/></numFmts>` +
      '<fonts count="2"><font><sz val="11"/><name val="Calibri"/></font><font><b/><sz val="11"/><name val="Calibri"/></font></fonts>' +
      '<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>' +
      '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>' +
      '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>' +
      '<cellXfs count="3"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>' +
      '<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>' +
      '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/></cellXfs>' +
      '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>',
  ],
];

/** The longest text a cell holds (Excel's limit). */
const MAX_CELL_TEXT = 32_767;
/** Excel's serial day number of 1970-01-01. */
const EPOCH_SERIAL = 25_569;
const DAY_MS = 86_400_000;

function xmlText(text: string): string {
  return text
    .slice(0, MAX_CELL_TEXT)
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '')
    .replace(/[<>&"]/g, (char) => `&#${char.charCodeAt(0)};`);
}

function textCell(text: string, style = ''): string {
  return `<c t="inlineStr"${style}><is><t xml:space="preserve">${xmlText(text)}</t></is></c>`;
}

function cell(column: Column<unknown>, value: CellValue, clock: ZoneClock): string {
  if (value === null) return '<c/>';
  switch (column.kind) {
    case 'time':
      return `<c s="1"><v>${clock.wallTime(value as number) / DAY_MS + EPOCH_SERIAL}</v></c>`;
    case 'boolean':
      return `<c t="b"><v>${value ? 1 : 0}</v></c>`;
    case 'number':
      return `<c><v>${value as number}</v></c>`;
    default:
      return textCell(String(value));
  }
}

function workbookXml(sheetName: string): string {
  return (
    `${XML_HEAD}<workbook xmlns="${MAIN}" xmlns:r="${RELATIONSHIPS}"><sheets>` +
    `<sheet name="${xmlText(sheetName.slice(0, 31))}" sheetId="1" r:id="rId1"/></sheets></workbook>`
  );
}

/** The XLSX file of a report, chunk by chunk: a bold header row, then one row per report row. */
export async function* xlsxReport<Row>(table: ReportTable<Row>): AsyncGenerator<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let failure: Error | null = null;
  const zip = new Zip((error, chunk) => {
    if (error) failure = error;
    else chunks.push(chunk);
  });
  const encoder = new TextEncoder();
  const add = (path: string, xml: string) => {
    const part = new ZipDeflate(path, { level: 6 });
    zip.add(part);
    part.push(encoder.encode(xml), true);
  };
  const drain = function* () {
    if (failure) throw failure;
    yield* chunks.splice(0);
  };

  for (const [path, xml] of STATIC_PARTS) add(path, xml);
  add('xl/workbook.xml', workbookXml(table.name));
  const sheet = new ZipDeflate('xl/worksheets/sheet1.xml', { level: 6 });
  zip.add(sheet);
  const columns = table.columns as readonly Column<unknown>[];
  const header = columns.map((column) => textCell(headerOf(column, table.clock), ' s="2"')).join('');
  sheet.push(encoder.encode(`${XML_HEAD}<worksheet xmlns="${MAIN}"><sheetData><row>${header}</row>`));
  yield* drain();
  for await (const page of table.pages) {
    let xml = '';
    for (const row of page) xml += `<row>${columns.map((column) => cell(column, column.value(row), table.clock)).join('')}</row>`;
    sheet.push(encoder.encode(xml));
    yield* drain();
  }
  sheet.push(encoder.encode('</sheetData></worksheet>'), true);
  zip.end();
  yield* drain();
}
