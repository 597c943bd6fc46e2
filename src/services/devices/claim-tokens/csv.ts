/** RFC 4180 CSV: the format of claim-token imports and exports (spreadsheets read and write it). */

export class CsvError extends Error {
  readonly line: number;
  constructor(line: number, problem: string) {
    super(`line ${line}: ${problem}`);
    this.line = line;
  }
}

export interface CsvRecord {
  /** 1-based line on which the record starts. */
  line: number;
  fields: string[];
}

/** Parses quoted fields ("" for a quote, commas and line breaks inside quotes), LF or CRLF, a leading BOM; skips blank lines. */
export function parseCsv(text: string): CsvRecord[] {
  const records: CsvRecord[] = [];
  const source = text.startsWith('\uFEFF') ? text.slice(1) : text;
  let fields: string[] = [];
  let field = '';
  let quoted = false;
  let fieldWasQuoted = false;
  let line = 1;
  let recordLine = 1;

  const endField = () => {
    fields.push(field);
    field = '';
    fieldWasQuoted = false;
  };
  const endRecord = () => {
    endField();
    if (fields.length > 1 || fields[0] !== '') records.push({ line: recordLine, fields });
    fields = [];
  };

  for (let index = 0; index < source.length; index++) {
    const char = source[index] as string;
    if (quoted) {
      if (char === '"') {
        if (source[index + 1] === '"') {
          field += '"';
          index++;
        } else {
          quoted = false;
        }
      } else {
        if (char === '\n') line++;
        field += char;
      }
      continue;
    }
    if (char === '"') {
      if (field !== '' || fieldWasQuoted) throw new CsvError(line, 'a quote inside an unquoted field');
      quoted = true;
      fieldWasQuoted = true;
    } else if (char === ',') {
      endField();
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && source[index + 1] === '\n') index++;
      endRecord();
      line++;
      recordLine = line;
    } else {
      if (fieldWasQuoted) throw new CsvError(line, 'text after a closing quote');
      field += char;
    }
  }
  if (quoted) throw new CsvError(recordLine, 'a quoted field is not closed');
  if (field !== '' || fields.length > 0 || fieldWasQuoted) endRecord();
  return records;
}

/** One CSV line (CRLF-terminated); fields with commas, quotes, line breaks or edge spaces are quoted. */
export function formatCsvRow(fields: readonly (string | number | null)[]): string {
  return `${fields.map(formatField).join(',')}\r\n`;
}

function formatField(value: string | number | null): string {
  const text = value === null ? '' : String(value);
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
