import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { AppError } from './errors.ts';
import { IDENTITY_HEADERS } from './identity.ts';

export interface InternalClientOptions {
  /** Base URL of a process that runs the service, e.g. http://devices:8082. */
  baseUrl: string;
  internalToken: string;
  /** Names the service in errors: "the devices service answered HTTP 503". */
  service: string;
  /** Per attempt: the answer's headers, and then its body, must each arrive within it. */
  timeoutMs?: number;
  /** Further attempts when the service cannot be reached, does not answer in time, or answers 502, 503 or 504. */
  retries?: number;
  /** Pause before each further attempt. */
  retryDelayMs?: number;
}

export interface InternalRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Sent as JSON. */
  body?: unknown;
  /** Overrides the client's retries for this call (e.g. waiting at start for a service starting beside us). */
  retries?: number;
  retryDelayMs?: number;
}

const RETRIED_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

/**
 * The one HTTP client between services: every call carries the internal token, has a timeout and
 * is retried when the service is unreachable or briefly unavailable. Internal routes are written to
 * be idempotent (lookups, or writes that set values), so a call that timed out may be sent again.
 * A service that cannot be reached, or answers anything but 200, is a 502 UPSTREAM_UNAVAILABLE for
 * the request that needed it.
 */
export class InternalClient {
  readonly service: string;
  private readonly baseUrl: string;
  private readonly internalToken: string;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly agent = new Agent({ connections: 32, keepAliveTimeout: 30_000 });

  constructor(options: InternalClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/$/, '');
    this.internalToken = options.internalToken;
    this.service = options.service;
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.retries = options.retries ?? 2;
    this.retryDelayMs = options.retryDelayMs ?? 100;
  }

  /** The JSON body of a 200 answer. */
  async json<T>(path: string, call: InternalRequest = {}): Promise<T> {
    const { status, body } = await this.send(path, call);
    if (status !== 200) throw this.unavailable(`answered HTTP ${status}`);
    return body as T;
  }

  /** The JSON body of a 200 answer, or undefined for 404. */
  async jsonOrNone<T>(path: string, call: InternalRequest = {}): Promise<T | undefined> {
    const { status, body } = await this.send(path, call);
    if (status === 404) return undefined;
    if (status !== 200) throw this.unavailable(`answered HTTP ${status}`);
    return body as T;
  }

  close(): Promise<void> {
    return this.agent.close();
  }

  private async send(path: string, call: InternalRequest): Promise<{ status: number; body: unknown }> {
    const retries = call.retries ?? this.retries;
    let failure = '';
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) await sleep(call.retryDelayMs ?? this.retryDelayMs);
      let answer: { status: number; text: string };
      try {
        const response = await request(`${this.baseUrl}${path}`, {
          dispatcher: this.agent,
          method: call.method ?? 'GET',
          headers: {
            [IDENTITY_HEADERS.internalToken]: this.internalToken,
            accept: 'application/json',
            ...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: call.body === undefined ? undefined : JSON.stringify(call.body),
          headersTimeout: this.timeoutMs,
          bodyTimeout: this.timeoutMs,
        });
        answer = { status: response.statusCode, text: await response.body.text() };
      } catch (error) {
        failure = `could not be reached (${error instanceof Error ? ((error as { code?: string }).code ?? error.message) : String(error)})`;
        continue;
      }
      if (RETRIED_STATUSES.has(answer.status)) {
        failure = `answered HTTP ${answer.status}`;
        continue;
      }
      try {
        return { status: answer.status, body: answer.text ? JSON.parse(answer.text) : undefined };
      } catch {
        throw this.unavailable(`answered HTTP ${answer.status} with a body that is not JSON`);
      }
    }
    throw this.unavailable(failure);
  }

  private unavailable(failure: string): AppError {
    return new AppError('UPSTREAM_UNAVAILABLE', `The ${this.service} service ${failure}`);
  }
}

