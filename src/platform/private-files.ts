import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

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
  if ((mode & 0o077) !== 0) narrow(target, mode);
}

/**
 * Narrows an existing DATA_DIR that group or others may enter to 0700, as an older version left it
 * (0755 under the usual umask) or as `mkdir` made it, and answers the mode it had; undefined when it
 * was private already or is not this process's to narrow: missing (it is created 0700), another
 * user's (a mount point root keeps), shared with the sticky bit (/tmp), the user's home or `/`.
 */
export function keepDataDirPrivate(dir: string): number | undefined {
  let stats;
  try {
    stats = statSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const resolved = path.resolve(dir);
  const shared = (stats.mode & 0o1000) !== 0 || resolved === path.parse(resolved).root || resolved === path.resolve(homedir());
  const ours = process.getuid === undefined || stats.uid === process.getuid();
  if (!stats.isDirectory() || (stats.mode & 0o077) === 0 || shared || !ours) return undefined;
  return narrow(dir, stats.mode) ? stats.mode & 0o777 : undefined;
}

/** Takes group and other permissions away; false when this user may not (a read-only mount is its owner's to protect). */
function narrow(target: string, mode: number): boolean {
  try {
    chmodSync(target, mode & 0o700);
    return true;
  } catch (error) {
    if (!['EPERM', 'EROFS', 'EACCES'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
    return false;
  }
}
