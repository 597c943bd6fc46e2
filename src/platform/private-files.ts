import { chmodSync, mkdirSync, statSync } from 'node:fs';

/** Creates `dir` and any missing parents readable by this process's user only (0700); an existing folder keeps its mode. */
export function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/**
 * Takes group and other permissions away from a file or folder holding secrets (0644 → 0600,
 * 0755 → 0700), for data written by an older version or copied in by hand. A path that does not
 * exist is left alone; so is one this user may not change (a read-only mount is its owner's to protect).
 */
export function keepPrivate(target: string): void {
  let mode: number;
  try {
    mode = statSync(target).mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if ((mode & 0o077) === 0) return;
  try {
    chmodSync(target, mode & 0o700);
  } catch (error) {
    if (!['EPERM', 'EROFS', 'EACCES'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
  }
}
