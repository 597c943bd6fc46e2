import assert from 'node:assert/strict';

/**
 * Polls until `check` holds, for effects that land a moment after the request that caused them: a
 * bus event crossing Redis, a cache refresh, a log line reaching the test through a pipe.
 */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(what);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
