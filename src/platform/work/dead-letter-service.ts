import type { EventBus } from '../bus.ts';
import type { Database } from '../db/database.ts';
import { AppError } from '../http/errors.ts';
import { isoOrNull } from '../http/schemas.ts';
import { DeadLetterRepository } from './dead-letters.ts';
import type { DeadLetterFilter, DeadLetterRow } from './dead-letters.ts';
import './errors.ts';

/** Hint: an administrator asked for a dead letter of `queue` to be retried; the processes owning its consumers put it back now. */
export const DEAD_LETTER_RETRY_TOPIC = 'platform.dead-letters.retry' as const;

declare module '../bus.ts' {
  interface DomainEvents {
    'platform.dead-letters.retry': { queue: string };
  }
}

/** How much of a letter's payload a list shows: enough to recognise the work, bounded whatever the payload. */
export const PAYLOAD_SUMMARY_CHARS = 1000;

export interface DeadLetterView {
  id: number;
  queue: string;
  consumer: string;
  topic: string;
  /** The payload's first PAYLOAD_SUMMARY_CHARS characters, and whether there is more. */
  payload: string;
  payloadTruncated: boolean;
  attempts: number;
  lastError: string | null;
  createdAt: string;
  failedAt: string;
  /** When an administrator asked for a retry the queue's owner has not carried out yet; null otherwise. */
  retryRequestedAt: string | null;
}

export interface DeadLetterPage {
  deadLetters: DeadLetterView[];
  total: number;
  page: number;
  limit: number;
}

/**
 * What administrators do with dead letters (DESIGN §1): list them and ask for a retry. A retry is
 * a request written on the letter; the process running the letter's consumer takes it back into
 * its queue at its next pass (at once where the hint reaches it), since only the queue's owner may
 * write the queue's table. Letters live in the platform's table of the one database every process
 * shares, so any process can list them and take the request.
 */
export class DeadLetterService {
  private readonly repository: DeadLetterRepository;
  private readonly bus: EventBus;

  constructor(database: Database, bus: EventBus) {
    this.repository = new DeadLetterRepository(database);
    this.bus = bus;
  }

  async list(query: DeadLetterFilter & { page: number; limit: number }): Promise<DeadLetterPage> {
    const { rows, total } = await this.repository.list(query, (query.page - 1) * query.limit, query.limit);
    return { deadLetters: rows.map(viewOf), total, page: query.page, limit: query.limit };
  }

  async retry(id: number): Promise<DeadLetterView> {
    const letter = await this.repository.requestRetry(id, Date.now());
    if (!letter) throw new AppError('DEAD_LETTER_NOT_FOUND');
    // Without the hint the owner's next poll (a second) still finds the request.
    await this.bus.publish(DEAD_LETTER_RETRY_TOPIC, { queue: letter.queue }).catch(() => undefined);
    return viewOf(letter);
  }
}

function viewOf(row: DeadLetterRow): DeadLetterView {
  return {
    id: Number(row.id),
    queue: row.queue,
    consumer: row.consumer,
    topic: row.topic,
    payload: row.payload.slice(0, PAYLOAD_SUMMARY_CHARS),
    payloadTruncated: row.payload.length > PAYLOAD_SUMMARY_CHARS,
    attempts: Number(row.attempts),
    lastError: row.last_error,
    createdAt: new Date(Number(row.created_at)).toISOString(),
    failedAt: new Date(Number(row.failed_at)).toISOString(),
    retryRequestedAt: isoOrNull(row.retry_requested_at === null ? null : Number(row.retry_requested_at)),
  };
}
