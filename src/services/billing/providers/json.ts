// Narrowing helpers for provider payloads: these arrive as untyped JSON and differ between API versions,
// so every field is read defensively instead of trusting SDK types.

export type JsonRecord = Record<string, unknown>;

export function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function recordAt(value: unknown, key: string): JsonRecord | undefined {
  if (!isRecord(value)) return undefined;
  const field = value[key];
  return isRecord(field) ? field : undefined;
}

export function nonEmptyStringAt(value: unknown, key: string): string | undefined {
  if (!isRecord(value)) return undefined;
  const field = value[key];
  return typeof field === 'string' && field.length > 0 ? field : undefined;
}

export function finiteNumberAt(value: unknown, key: string): number | undefined {
  if (!isRecord(value)) return undefined;
  const field = value[key];
  return typeof field === 'number' && Number.isFinite(field) ? field : undefined;
}

export function firstListItem(list: unknown): JsonRecord | undefined {
  const items = isRecord(list) ? list['data'] : undefined;
  if (!Array.isArray(items)) return undefined;
  const first: unknown = items[0];
  return isRecord(first) ? first : undefined;
}

export function listItems(list: unknown): JsonRecord[] {
  const items = isRecord(list) ? list['data'] : undefined;
  return Array.isArray(items) ? items.filter(isRecord) : [];
}

/** Reads an id from a field that is either an id string or an expanded object carrying `id`. */
export function idOrExpandedIdAt(value: unknown, key: string): string | undefined {
  if (!isRecord(value)) return undefined;
  const field = value[key];
  if (typeof field === 'string' && field.length > 0) return field;
  return nonEmptyStringAt(field, 'id');
}

export function dateFromUnixSeconds(seconds: number | undefined): Date | null {
  return seconds === undefined ? null : new Date(seconds * 1000);
}

export function dateFromUnixMillis(millis: number | undefined): Date | null {
  return millis === undefined ? null : new Date(millis);
}

const POSITIVE_INTEGER = /^[1-9][0-9]*$/;

/** Our user ids travel as metadata strings; anything but a positive safe integer is treated as absent. */
export function parseUserId(value: unknown): number | undefined {
  if (typeof value !== 'string' || !POSITIVE_INTEGER.test(value)) return undefined;
  const userId = Number(value);
  return Number.isSafeInteger(userId) ? userId : undefined;
}
