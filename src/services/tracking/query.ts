import { AppError } from './errors.ts';

/** 400 VALIDATION_FAILED about one query parameter, shaped like the schema validator's answers. */
export function invalidQuery(parameter: string, message: string): AppError {
  const path = `/query/${parameter}`;
  return new AppError('VALIDATION_FAILED', `${path} ${message}`, { details: [{ path, message }] });
}

/** An inclusive range from ISO 8601 bounds (both required; the schema checked their format). */
export function timeRange(from: string | undefined, to: string | undefined): { from: number; to: number } {
  if (from === undefined) throw invalidQuery('from', 'is required with to');
  if (to === undefined) throw invalidQuery('to', 'is required with from');
  const range = { from: parseTime(from, 'from'), to: parseTime(to, 'to') };
  if (range.from > range.to) throw invalidQuery('to', 'must not be before from');
  return range;
}

export function parseTime(text: string, parameter: string): number {
  const ms = Date.parse(text);
  if (!Number.isFinite(ms)) throw invalidQuery(parameter, 'must be an ISO 8601 date-time');
  return ms;
}
