import assert from 'node:assert/strict';
import { unzipSync, strFromU8 } from 'fflate';

/** RFC 4180 text parsed into records (quoted fields, doubled quotes, CRLF), the header row first. */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index] as string;
    if (quoted) {
      if (char === '"' && text[index + 1] === '"') {
        field += '"';
        index += 1;
      } else if (char === '"') quoted = false;
      else field += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') {
      record.push(field);
      field = '';
    } else if (char === '\r' && text[index + 1] === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      index += 1;
    } else field += char;
  }
  assert.equal(field, '', 'the last record ends with CRLF');
  return records;
}

/** A cell of an XLSX sheet as read back: a number, text, a flag, or null for an empty cell; `style` 1 marks a date. */
export interface XlsxCell {
  value: number | string | boolean | null;
  style: number;
}

function xmlUnescape(text: string): string {
  return text.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code))).replace(/&(lt|gt|amp|quot|apos);/g, (_, name: string) => ({ lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" })[name] as string);
}

/**
 * Opens an XLSX file as a spreadsheet application does: the zip (read by fflate, the library the
 * writer uses), the parts a workbook needs and their relationships, then the first sheet's rows.
 */
export function readXlsx(bytes: Uint8Array): { sheetName: string; rows: XlsxCell[][] } {
  const files = unzipSync(bytes);
  const text = (path: string) => {
    const file = files[path];
    assert.ok(file, `the workbook has ${path}`);
    return strFromU8(file);
  };
  assert.match(text('[Content_Types].xml'), /PartName="\/xl\/workbook.xml" ContentType="application\/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main\+xml"/);
  assert.match(text('_rels/.rels'), /Target="xl\/workbook.xml"/);
  const workbook = text('xl/workbook.xml');
  const sheetName = xmlUnescape(/<sheet name="([^"]*)" sheetId="1" r:id="rId1"\/>/.exec(workbook)?.[1] ?? assert.fail('a sheet'));
  assert.match(text('xl/_rels/workbook.xml.rels'), /Id="rId1" Type="[^"]+\/worksheet" Target="worksheets\/sheet1.xml"/);
  assert.match(text('xl/styles.xml'), /<cellXfs count="3">/);
  const sheet = text('xl/worksheets/sheet1.xml');
  assert.match(sheet, /^<\?xml version="1.0" encoding="UTF-8" standalone="yes"\?>\n<worksheet [^>]*><sheetData>.*<\/sheetData><\/worksheet>$/s);
  const rows: XlsxCell[][] = [];
  for (const [, row] of sheet.matchAll(/<row>(.*?)<\/row>/gs)) {
    const cells: XlsxCell[] = [];
    for (const [, attributes = '', body] of (row as string).matchAll(/<c([^>]*?)(?:\/>|>(.*?)<\/c>)/gs)) {
      const style = Number(/ s="(\d+)"/.exec(attributes)?.[1] ?? 0);
      const type = / t="([^"]+)"/.exec(attributes)?.[1];
      if (body === undefined) cells.push({ value: null, style });
      else if (type === 'inlineStr') cells.push({ value: xmlUnescape(/<t[^>]*>(.*?)<\/t>/s.exec(body)?.[1] ?? ''), style });
      else if (type === 'b') cells.push({ value: /<v>1<\/v>/.test(body), style });
      else cells.push({ value: Number(/<v>(.*?)<\/v>/.exec(body)?.[1]), style });
    }
    rows.push(cells);
  }
  return { sheetName, rows };
}

/** Excel's serial date (days since 1899-12-30) back to the wall-clock time it shows, as UTC ms. */
export function serialToWallTime(serial: number): number {
  return Math.round((serial - 25_569) * 86_400_000);
}
