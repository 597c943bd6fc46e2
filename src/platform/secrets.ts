import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { keepPrivate, makePrivateDir } from './private-files.ts';

/**
 * Returns the secret stored in `file`, creating it with `create()` on first start. The exclusive
 * create lets two processes starting together on one DATA_DIR agree on the same secret. The file is
 * 0600 (an existing one is narrowed to it) in a folder created 0700.
 */
export function readOrCreateSecret(file: string, create: () => string): string {
  try {
    keepPrivate(file);
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  makePrivateDir(path.dirname(file));
  try {
    writeFileSync(file, create(), { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return readFileSync(file, 'utf8');
}
