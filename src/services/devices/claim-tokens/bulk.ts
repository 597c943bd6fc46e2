import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import QRCode from 'qrcode';
import { MAX_UNIQUE_ID_LENGTH } from '../access.ts';
import { AppError } from '../errors.ts';
import { parseCsv, formatCsvRow } from './csv.ts';
import type { ClaimTokenStatus } from './repository.ts';
import type { ClaimTokenService, ClaimTokenView, NewClaimToken, Transfer } from './service.ts';

/** An import refused as a whole; each problem names its CSV line. */
export class ImportError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`the file was not imported:\n${problems.map((problem) => `  ${problem}`).join('\n')}`);
    this.problems = problems;
  }
}

const COLUMNS = ['uniqueId', 'modelCode', 'modelName'] as const;
type Column = (typeof COLUMNS)[number];
/** The same rules as the API's request schemas. */
const IDENTIFIER = /^[\x21-\x7E]+$/;
const LIMITS: Record<Column, number> = { uniqueId: MAX_UNIQUE_ID_LENGTH, modelCode: 64, modelName: 128 };
const EXPORT_PAGE = 1000;
export const EXPORT_CSV = 'claim-tokens.csv';
/** Medium error correction survives a scuffed box; 8 pixels a module prints sharply at about 3 cm. */
export const QR_OPTIONS = { type: 'png', errorCorrectionLevel: 'M', margin: 4, scale: 8 } as const;

interface ImportRow extends NewClaimToken {
  line: number;
}

/**
 * Reads `uniqueId,modelCode,modelName` rows: a header row naming these columns (any order) is
 * optional; an empty uniqueId makes a token "not configured", an empty modelName none.
 */
export function readImportCsv(text: string): ImportRow[] {
  const records = parseCsv(text);
  const first = records[0];
  let columns: Column[] = [...COLUMNS];
  let body = records;
  if (first && first.fields.some((field) => field.trim().toLowerCase() === 'modelcode')) {
    const named = first.fields.map((field) => COLUMNS.find((column) => column.toLowerCase() === field.trim().toLowerCase()));
    const unknown = first.fields.filter((_field, index) => named[index] === undefined);
    if (unknown.length > 0) throw new ImportError([`line ${first.line}: unknown column(s) ${unknown.join(', ')}; expected ${COLUMNS.join(', ')}`]);
    columns = named as Column[];
    body = records.slice(1);
  }
  const problems: string[] = [];
  const rows: ImportRow[] = [];
  for (const record of body) {
    if (record.fields.length > columns.length) {
      problems.push(`line ${record.line}: ${record.fields.length} fields, expected at most ${columns.length}`);
      continue;
    }
    const value = (column: Column): string | null => {
      const index = columns.indexOf(column);
      const field = index === -1 ? undefined : record.fields[index]?.trim();
      return field === undefined || field === '' ? null : field;
    };
    const row = { line: record.line, uniqueId: value('uniqueId'), modelCode: value('modelCode'), modelName: value('modelName') };
    const rowProblems = checkRow(row);
    if (rowProblems.length > 0 || row.modelCode === null) {
      problems.push(...rowProblems.map((problem) => `line ${record.line}: ${problem}`));
      continue;
    }
    rows.push({ ...row, modelCode: row.modelCode });
  }
  if (problems.length > 0) throw new ImportError(problems);
  if (rows.length === 0) throw new ImportError(['the file holds no rows']);
  return rows;
}

function checkRow(row: Record<Column, string | null>): string[] {
  const problems: string[] = [];
  if (row.modelCode === null) problems.push('modelCode is required');
  for (const column of COLUMNS) {
    const value = row[column];
    if (value === null) continue;
    if (value.length > LIMITS[column]) problems.push(`${column} is longer than ${LIMITS[column]} characters`);
    else if (column !== 'modelName' && !IDENTIFIER.test(value)) problems.push(`${column} must be printable ASCII without spaces`);
  }
  return problems;
}

/**
 * Imports every row or none; returns the new tokens in the order of the file. A uniqueId that a
 * device has already refuses the file unless `transfer` says its claim may take that device.
 */
export async function importClaimTokens(service: ClaimTokenService, text: string, options: Transfer = {}): Promise<ClaimTokenView[]> {
  const rows = readImportCsv(text);
  try {
    return await service.createMany(rows.map(({ uniqueId, modelCode, modelName }) => ({ uniqueId, modelCode, modelName })), options);
  } catch (error) {
    if (!(error instanceof AppError) || !error.details) throw error;
    throw new ImportError(
      error.details.map((detail) => {
        const index = Number(/^\/(\d+)\//.exec(detail.path)?.[1]);
        return `line ${rows[index]?.line ?? '?'}: uniqueId ${detail.message}`;
      }),
    );
  }
}

export function formatImportedTokens(tokens: readonly ClaimTokenView[]): string {
  return [formatCsvRow(['token', 'uniqueId', 'modelCode', 'model']), ...tokens.map((token) => formatCsvRow([token.token, token.uniqueId, token.modelCode, token.model]))].join('');
}

/**
 * Writes `claim-tokens.csv` and one `<token>.png` QR code per token into `directory`; the QR code
 * holds the printed token (XXXX-XXXX-XXXX), which the app's scanner sends to validate-token.
 */
export async function exportClaimTokens(service: ClaimTokenService, directory: string, status?: ClaimTokenStatus): Promise<number> {
  await mkdir(directory, { recursive: true });
  const lines = [formatCsvRow(['token', 'uniqueId', 'modelCode', 'model', 'status', 'claimedAt', 'createdAt'])];
  let count = 0;
  for (let offset = 0; ; offset += EXPORT_PAGE) {
    const page = await service.list({ status, limit: EXPORT_PAGE, offset });
    for (const token of page) {
      lines.push(formatCsvRow([token.token, token.uniqueId, token.modelCode, token.model, token.status, token.claimedAt, token.createdAt]));
      await QRCode.toFile(path.join(directory, `${token.token}.png`), token.token, QR_OPTIONS);
    }
    count += page.length;
    if (page.length < EXPORT_PAGE) break;
  }
  await writeFile(path.join(directory, EXPORT_CSV), lines.join(''));
  return count;
}
