import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

/** The mails the outbox holds, complete ones only: a mail is written as `.partial` and then renamed. */
export function outboxMails(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((file) => file.endsWith('.eml')).map((file) => path.join(dir, file));
}
