/** Splits a list into consecutive slices of at most `size` items (for bounded IN lists and multi-row inserts). */
export function chunksOf<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let start = 0; start < items.length; start += size) chunks.push(items.slice(start, start + size));
  return chunks;
}
