/** An error code's HTTP status and default message. */
export type ErrorEntry = readonly [status: number, message: string];
export type ErrorTable = Readonly<Record<string, ErrorEntry>>;

/**
 * The platform's own codes: what the HTTP layer, the access checks and the gateway answer whatever
 * the module. A module declares its codes in its own `errors.ts` (see `ErrorTables`).
 */
export const PLATFORM_ERRORS = {
  VALIDATION_FAILED: [400, 'The request is invalid'],
  MALFORMED_JSON: [400, 'The request body is not valid JSON'],
  BAD_REQUEST: [400, 'Bad request'],
  UNAUTHORIZED: [401, 'Authentication required'],
  FORBIDDEN: [403, 'Access denied'],
  NOT_FOUND: [404, 'Not found'],
  REQUEST_TIMEOUT: [408, 'The request took too long to arrive'],
  PAYLOAD_TOO_LARGE: [413, 'The request body is too large'],
  URI_TOO_LONG: [414, 'A path parameter is too long'],
  UNSUPPORTED_MEDIA_TYPE: [415, 'Unsupported content type'],
  RATE_LIMITED: [429, 'Too many requests, try again later'],
  HEADERS_TOO_LARGE: [431, 'The request headers are too large'],
  INTERNAL_ERROR: [500, 'Internal server error'],
  UPSTREAM_UNAVAILABLE: [502, 'The service behind the gateway is unavailable'],
  // answered on PORT while the process migrates its database and starts (platform/http/starting.ts)
  STARTING: [503, 'The server is starting; try again in a moment'],
  // caps on what one user may hold (MAX_* settings), raised by devices and tracking through limitReached; details name the limit and the usage
  LIMIT_REACHED: [409, 'A server limit is reached'],
} as const satisfies ErrorTable;

/**
 * Each owner's table of codes, by owner. A module adds its own by augmenting this interface
 * (`declare module '…/platform/http/errors.ts' { interface ErrorTables { auth: typeof AUTH_ERRORS } }`)
 * and passing the same table to `declareErrorCodes`, so `new AppError(code)` is checked against
 * every declared code at compile time and finds its status and message at run time.
 */
export interface ErrorTables {
  platform: typeof PLATFORM_ERRORS;
}

export type ErrorCode = { [Owner in keyof ErrorTables]: keyof ErrorTables[Owner] & string }[keyof ErrorTables];

const declared: Record<string, ErrorEntry> = {};
const owners = new Map<string, keyof ErrorTables>();

/**
 * Every code declared so far, with its status and default message: the platform's, and each
 * module's once its `errors.ts` is loaded (the module's files import `AppError` from it).
 */
export const ERROR_CODES = declared as { readonly [Code in ErrorCode]: ErrorEntry };

/** Makes an owner's codes known at run time; a code declared already stops the process, with none of the table declared. */
export function declareErrorCodes<Owner extends keyof ErrorTables>(owner: Owner, table: ErrorTables[Owner]): void {
  const taken = Object.keys(table).filter((code) => owners.has(code));
  if (taken.length > 0) {
    throw new Error(`Error codes declared twice: ${taken.map((code) => `${code} (by ${owners.get(code)} and ${owner})`).join(', ')}`);
  }
  for (const [code, entry] of Object.entries(table)) {
    owners.set(code, owner);
    declared[code] = entry;
  }
}

/** Who declared a code: `platform` or a module's name. */
export function errorCodeOwner(code: string): keyof ErrorTables | undefined {
  return owners.get(code);
}

declareErrorCodes('platform', PLATFORM_ERRORS);

export interface ErrorDetail {
  path: string;
  message: string;
  /** For a limit reached: the limit's name, its value and the usage before the request. */
  limit?: string;
  max?: number;
  usage?: number;
  /** For a feature a plan lacks (FEATURE_NOT_IN_PLAN): `commands`, `reports`, `scheduledReports`, or `channels.<name>`. */
  feature?: string;
}

/** An error meant for the client: the single error handler turns it into the JSON error body. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly details: ErrorDetail[] | undefined;
  readonly headers: Record<string, string> | undefined;

  /**
   * `statusCode` is for the few routes whose contract gives a code another status than its usual one
   * (spec §4.1: a bad reset link is 400, where a bad access token is 401); docs/errors.md names them.
   */
  constructor(code: ErrorCode, message?: string, options?: { details?: ErrorDetail[]; headers?: Record<string, string>; statusCode?: number }) {
    const entry = ERROR_CODES[code] as ErrorEntry | undefined;
    if (!entry) throw new Error(`Error code ${code} is not declared yet: import the errors.ts of the module that owns it`);
    const [statusCode, fallback] = entry;
    super(message ?? fallback);
    this.code = code;
    this.statusCode = options?.statusCode ?? statusCode;
    this.details = options?.details;
    this.headers = options?.headers;
  }
}

/** 409 LIMIT_REACHED: `usage` (before the request) plus what the request adds would pass `max`. */
export function limitReached(limit: string, max: number, usage: number, message: string, path = '/body'): AppError {
  return new AppError('LIMIT_REACHED', message, { details: [{ path, message, limit, max, usage }] });
}

/**
 * An operation of a module that is not running in this process: every call fails with 502 until a
 * remote implementation is passed in (the health endpoint keeps answering).
 */
export function unavailable(what: string): () => Promise<never> {
  return () => Promise.reject(new AppError('UPSTREAM_UNAVAILABLE', `The ${what} is not available to this process`));
}
