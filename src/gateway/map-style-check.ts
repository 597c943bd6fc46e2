/**
 * Whether the map style the web app will load (MAP_STYLE_URL) can be read, and one of its tiles: what
 * the startup banner tells an operator, since a style or tile server out of reach leaves every user's
 * map without streets. Runs after start, never before it; every request has a short timeout.
 */

/** How long each request of the check may take. */
export const MAP_STYLE_CHECK_TIMEOUT_MS = 3000;

interface StyleSource {
  tiles?: unknown;
  url?: unknown;
}

/** `styleUrl` as configured (an http(s) URL or a path on this server, read at `serverUrl`); the answer is a short phrase for the banner. */
export async function checkMapStyle(styleUrl: string, serverUrl: string, timeoutMs = MAP_STYLE_CHECK_TIMEOUT_MS): Promise<{ reachable: boolean; detail: string }> {
  try {
    const style = (await readJson(new URL(styleUrl, serverUrl), timeoutMs)) as { sources?: Record<string, StyleSource> };
    const tile = await firstTile(Object.values(style.sources ?? {}), new URL(styleUrl, serverUrl), timeoutMs);
    if (!tile) return { reachable: true, detail: 'reachable (no tiles)' };
    try {
      const response = await fetch(tile, { signal: AbortSignal.timeout(timeoutMs) });
      await response.body?.cancel();
      if (response.ok) return { reachable: true, detail: 'reachable, tiles too' };
      return { reachable: false, detail: `style reachable, tiles NOT: ${tile} answered ${response.status}` };
    } catch (error) {
      return { reachable: false, detail: `style reachable, tiles NOT: ${tile}: ${reason(error)}` };
    }
  } catch (error) {
    return { reachable: false, detail: `NOT reachable: ${reason(error)}` };
  }
}

async function readJson(url: URL, timeoutMs: number): Promise<unknown> {
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`${url} answered ${response.status}`);
  }
  return response.json();
}

/** The first source's tile at zoom 0, from its `tiles` or from the TileJSON its `url` names. */
async function firstTile(sources: StyleSource[], base: URL, timeoutMs: number): Promise<string | undefined> {
  for (const source of sources) {
    let tiles = source.tiles;
    if (!Array.isArray(tiles) && typeof source.url === 'string') tiles = ((await readJson(new URL(source.url, base), timeoutMs)) as StyleSource).tiles;
    const [template] = Array.isArray(tiles) ? tiles : [];
    if (typeof template === 'string') return new URL(template.replace('{z}', '0').replace('{x}', '0').replace('{y}', '0'), base).toString();
  }
  return undefined;
}

function reason(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return 'no answer in time';
  if (error instanceof Error && error.cause instanceof Error) return `${error.message} (${error.cause.message})`;
  return error instanceof Error ? error.message : String(error);
}
