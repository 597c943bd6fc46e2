import { declareErrorCodes } from '../http/errors.ts';
import type { ErrorTable } from '../http/errors.ts';

/** The codes of the dead-letter administration (docs/errors.md, Durable work). */
export const WORK_ERRORS = {
  DEAD_LETTER_NOT_FOUND: [404, 'No such dead letter (it may have been retried already)'],
} as const satisfies ErrorTable;

declare module '../http/errors.ts' {
  interface ErrorTables {
    work: typeof WORK_ERRORS;
  }
}

declareErrorCodes('work', WORK_ERRORS);
