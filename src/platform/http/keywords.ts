import type { Ajv, ErrorObject, FuncKeywordDefinition } from 'ajv';

type DataValidateFunction = ReturnType<NonNullable<FuncKeywordDefinition['compile']>>;
type DataValidationCxt = NonNullable<Parameters<DataValidateFunction>[1]>;

/**
 * Schema keywords of the shared input schemas (schemas.ts), added to every validator of the app.
 * Both do their whole check themselves, so a schema never depends on the order Ajv runs keywords.
 */

/** `{minimum, maximum}`: a string of decimal digits within the bounds, replaced by its number. */
export const DECIMAL_INTEGER_KEYWORD = 'x-decimal-integer';
/** `{maxDepth, maxBytes}`: a JSON value nested at most maxDepth levels and at most maxBytes as JSON text. */
export const JSON_LIMITS_KEYWORD = 'x-json-limits';

export interface IntegerBounds {
  minimum: number;
  maximum: number;
}

export interface JsonLimits {
  maxDepth: number;
  maxBytes: number;
}

const DECIMAL_DIGITS = /^(0|[1-9][0-9]*)$/;
/** A path in an error message names at most this many characters of the offending place. */
const MAX_REPORTED_PATH = 200;

type Failure = Partial<ErrorObject>;

function failing(validate: DataValidateFunction, failure: Failure): false {
  validate.errors = [failure];
  return false;
}

/**
 * Path and query values arrive as text. Ajv's own coercion reads `0x2`, `0b10`, `2e0`, `2.0`,
 * ` 2` and `1e309` as numbers; this keyword accepts only the canonical decimal form.
 */
function compileDecimalInteger(bounds: IntegerBounds): DataValidateFunction {
  const message = `must be a whole number from ${bounds.minimum} to ${bounds.maximum}, in decimal digits`;
  const validate: DataValidateFunction = (data: unknown, context?: DataValidationCxt) => {
    if (typeof data !== 'string' || !DECIMAL_DIGITS.test(data)) return failing(validate, { message });
    const value = Number(data);
    if (!(value >= bounds.minimum && value <= bounds.maximum)) return failing(validate, { message });
    if (context) (context.parentData as Record<string | number, unknown>)[context.parentDataProperty] = value;
    return true;
  };
  return validate;
}

function pointerSegment(key: string | number): string {
  return String(key).replace(/~/g, '~0').replace(/\//g, '~1');
}

function reportedPath(path: string): string {
  return path.length > MAX_REPORTED_PATH ? `${path.slice(0, MAX_REPORTED_PATH)}…` : path;
}

/**
 * The path of the first value nested deeper than `maxDepth` levels below `value`, if any. Walks
 * without recursion: a request may nest thousands of levels, which recursion (JSON.stringify's
 * too) would answer with a stack overflow.
 */
export function tooDeepAt(value: unknown, maxDepth: number, base = ''): string | undefined {
  const pending: { value: unknown; path: string; depth: number }[] = [{ value, path: base, depth: 0 }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (typeof next.value !== 'object' || next.value === null) continue;
    for (const [key, child] of Object.entries(next.value)) {
      const path = `${next.path}/${pointerSegment(key)}`;
      if (next.depth >= maxDepth) return reportedPath(path);
      pending.push({ value: child, path, depth: next.depth + 1 });
    }
  }
  return undefined;
}

/** The JSON text is measured only once the depth is known to be safe to serialise. */
function compileJsonLimits(limits: JsonLimits): DataValidateFunction {
  const validate: DataValidateFunction = (data: unknown, context?: DataValidationCxt) => {
    const deepPath = tooDeepAt(data, limits.maxDepth, context?.instancePath);
    if (deepPath !== undefined) return failing(validate, { instancePath: deepPath, message: `nests deeper than ${limits.maxDepth} levels` });
    if (Buffer.byteLength(JSON.stringify(data)) > limits.maxBytes) {
      return failing(validate, { message: `must be at most ${limits.maxBytes} bytes as JSON` });
    }
    return true;
  };
  return validate;
}

export function addInputKeywords(ajv: Ajv): Ajv {
  ajv.addKeyword({ keyword: DECIMAL_INTEGER_KEYWORD, type: 'string', modifying: true, errors: true, compile: compileDecimalInteger });
  ajv.addKeyword({ keyword: JSON_LIMITS_KEYWORD, errors: true, compile: compileJsonLimits });
  return ajv;
}
