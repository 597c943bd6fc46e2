// How the push senders turn a provider's HTTP answer into a delivery outcome (DESIGN §5.6).
import type { PushOutcome } from './push-sender.ts';

/** How long one request to a provider may take when the caller's signal allows longer. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 15_000;

/** Longest provider reason kept in a delivery's last error. */
const MAX_REASON_LENGTH = 200;

/** The caller's signal, also aborted after `timeoutMs`. */
export function requestSignal(signal: AbortSignal, timeoutMs: number): AbortSignal {
  return AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
}

/** Retry-After as seconds or an HTTP date, in milliseconds from now; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** 5xx, 408 and 429 are tried again (after Retry-After when given); any other status is final. */
export function refusal(provider: string, status: number, reason: string, retryAfter?: string | null): PushOutcome {
  const error = `${provider} answered ${status}${reason ? `: ${reason.slice(0, MAX_REASON_LENGTH)}` : ''}`;
  if (status >= 500 || status === 408 || status === 429) {
    const after = retryAfterMs(retryAfter);
    return after === undefined ? { kind: 'retry', error } : { kind: 'retry', error, retryAfterMs: after };
  }
  return { kind: 'final', error };
}

/** A connection failure, a timeout or an abort: tried again later. */
export function unreachable(provider: string, error: unknown): PushOutcome {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : undefined;
  const name = error instanceof Error ? error.name : '';
  // fetch rejects with the signal's reason; node:http2 wraps it in an AbortError whose cause is the reason.
  if (name === 'TimeoutError' || cause?.name === 'TimeoutError') return { kind: 'retry', error: `${provider}: no answer in time` };
  if (name === 'AbortError') return { kind: 'retry', error: `${provider}: request aborted` };
  const failure = cause ?? error;
  const code = (failure as NodeJS.ErrnoException | undefined)?.code;
  const message = code ?? (failure instanceof Error ? failure.message : String(failure));
  return { kind: 'retry', error: `${provider} unreachable: ${message.slice(0, MAX_REASON_LENGTH)}` };
}

/** At most `maxBytes` of a response body as text; the rest is not read (a provider's error reason is short). A body cut off reads as what arrived. */
export async function boundedText(response: Response, maxBytes = 4096): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  try {
    while (length < maxBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      length += value.length;
    }
  } catch {
    // The status already decides the outcome; a broken body only shortens the reason.
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8');
}
