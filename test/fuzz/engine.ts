// Fuzzes the operations of /openapi.json on the real all-in-one server (DESIGN §7): no answer is a 5xx, every error
// is JSON with a documented `code`, a refused request (4xx) changes no row of any table, and no request leaves state that
// makes a later read of the fixtures answer 5xx.
import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import fc from 'fast-check';
import { ERROR_CODES } from '../../src/platform/http/errors.ts';
import type { TestEngine } from '../support/engines.ts';
import type { TestServer } from '../support/server.ts';
import { startBillingTestServer, stopBillingTestServer } from '../services/billing/support/server.ts';
import type { BillingTestSetup } from '../services/billing/support/server.ts';
import { operationName, operationsOf, render, requestsFor } from './requests.ts';
import type { Credential, GeneratedRequest, Operation, RenderedRequest } from './requests.ts';
import { differences, digests, rows, sameDigests, tableNames } from './state.ts';
import { FuzzWorld } from './world.ts';

/** What `npm test` runs: the same requests on every run. `npm run fuzz` takes others. */
export const CI_SEED = 20_250_301;
export const CI_COUNT = 25;

/** An answer slower than this is reported, not awaited further. */
const ANSWER_TIMEOUT_MS = 30_000;

export interface Finding {
  operation: string;
  /** The request's index in the operation's sequence for the seed. */
  index: number;
  problem: string;
  credential: string;
  request: string;
  answer: string;
}

export interface OperationReport {
  sent: number;
  /** Requests the fuzzer could not build (a mutated payload its own signer cannot serialise). */
  unsent: number;
  statuses: Map<number, number>;
  findings: Finding[];
}

export interface FuzzSession {
  operations: Operation[];
  fuzz(operation: Operation, options: { seed: number; count: number }): Promise<OperationReport>;
  close(): Promise<void>;
}

export async function startFuzzSession(engine: TestEngine): Promise<FuzzSession> {
  const setup: Partial<BillingTestSetup> = {};
  try {
    // With rate limits, the auth routes would soon answer every request 429 and hide what lies behind them.
    Object.assign(setup, await startBillingTestServer(engine, { RATE_LIMITS: 'off' }));
    const { server, providers } = setup as BillingTestSetup;
    const database = server.database;
    if (!database) throw new Error('the test server has no database');
    const world = new FuzzWorld(server, providers);
    await world.build();
    // Facts the fixtures recorded (stored events for notifications) and the trips and stops of their positions are
    // written before the first snapshot.
    await server.outbox?.drainNow();
    await server.tracking?.segmentation.settled();
    const operations = operationsOf((await server.app.inject({ url: '/openapi.json' })).json());
    const tables = await tableNames(database);
    const readDigests = () => digests(database, tables);
    const readRows = () => rows(database, tables);
    /** The settled state every request is compared with. */
    let state = { digests: await readDigests(), rows: await readRows() };

    /**
     * After a request that changed something: waits out what it set going (bus events), lists the reads its
     * state breaks, then repairs the fixtures and takes the new state as the one to compare with.
     */
    const settle = async (): Promise<string[]> => {
      let previous = await readDigests();
      for (let attempt = 0; attempt < 50; attempt += 1) {
        await delay(10);
        const next = await readDigests();
        if (sameDigests(previous, next)) break;
        previous = next;
      }
      const broken = await world.brokenReads();
      await world.repair();
      await server.outbox?.drainNow();
      await server.tracking?.segmentation.settled();
      state = { digests: await readDigests(), rows: await readRows() };
      return broken;
    };

    return {
      operations,
      async fuzz(operation, { seed, count }) {
        const report: OperationReport = { sent: 0, unsent: 0, statuses: new Map(), findings: [] };
        const requests = fc.sample(requestsFor(operation), { seed: operationSeed(seed, operation), numRuns: count });
        for (const [index, generated] of requests.entries()) {
          let rendered: RenderedRequest;
          try {
            rendered = await render(operation, generated, world);
          } catch {
            report.unsent += 1;
            continue;
          }
          const answer = await send(server, rendered);
          // Work a request sets going after its answer (mails, facts between modules) belongs to that request.
          await server.auth?.mailSettled();
          await server.outbox?.drainNow();
          await server.tracking?.segmentation.settled();
          report.sent += 1;
          report.statuses.set(answer.status, (report.statuses.get(answer.status) ?? 0) + 1);
          const changed = !sameDigests(state.digests, await readDigests());
          const problems = answerProblems(answer);
          if (answer.status >= 400 && changed && !countsAnAttempt(answer)) problems.push(`refused, yet changed ${differences(state.rows, await readRows()).join('; ')}`);
          if (changed || answer.status === 0) problems.push(...(await settle()).map((read) => `left state after which ${read}`));
          for (const problem of problems) {
            report.findings.push({
              operation: operationName(operation),
              index,
              problem,
              credential: credentialLabel(generated.credential),
              request: describeRequest(rendered, generated),
              answer: describeAnswer(answer),
            });
          }
        }
        return report;
      },
      close: () => stopBillingTestServer(setup),
    };
  } catch (error) {
    await stopBillingTestServer(setup);
    throw error;
  }
}

/** Each operation draws from its own stream, so adding a route does not change the requests of the others. */
function operationSeed(seed: number, operation: Operation): number {
  return createHash('sha256').update(`${seed} ${operationName(operation)}`).digest().readInt32BE(0);
}

interface Answer {
  /** 0 when no answer came in time. */
  status: number;
  contentType: string;
  body: string;
}

async function send(server: TestServer, request: RenderedRequest): Promise<Answer> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Answer>((resolve) => {
    timer = setTimeout(() => resolve({ status: 0, contentType: '', body: `no answer within ${ANSWER_TIMEOUT_MS} ms` }), ANSWER_TIMEOUT_MS);
  });
  const injected = server.app
    .inject({ method: request.method as 'GET', url: request.url, headers: request.headers, ...(request.payload === undefined ? {} : { payload: request.payload }) })
    .then((response) => ({ status: response.statusCode, contentType: String(response.headers['content-type'] ?? ''), body: response.body }));
  try {
    return await Promise.race([injected, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Refusals whose documented effect is a counted try: five wrong codes burn the code (DESIGN §5.2). */
const COUNTED_TRIES = new Set(['INVALID_2FA_CODE', 'INVALID_2FA_LOGIN_CODE', 'INVALID_VERIFICATION_CODE', 'TEMP_TOKEN_EXPIRED']);

function countsAnAttempt(answer: Answer): boolean {
  try {
    return COUNTED_TRIES.has((JSON.parse(answer.body) as { code?: string }).code ?? '');
  } catch {
    return false;
  }
}

function answerProblems(answer: Answer): string[] {
  if (answer.status === 0) return [answer.body];
  if (answer.status >= 500) return [`answered ${answer.status}`];
  if (answer.status < 400) return [];
  if (!answer.contentType.startsWith('application/json')) return [`error ${answer.status} is not JSON (${answer.contentType || 'no content type'})`];
  let body: unknown;
  try {
    body = JSON.parse(answer.body);
  } catch {
    return [`error ${answer.status} does not parse as JSON`];
  }
  const fields = body as { code?: unknown; statusCode?: unknown };
  if (typeof fields.code !== 'string' || fields.code === '') return [`error ${answer.status} has no code`];
  if (!Object.hasOwn(ERROR_CODES, fields.code)) return [`error ${answer.status} has the undocumented code ${fields.code}`];
  if (fields.statusCode !== answer.status) return [`error ${answer.status} says statusCode ${String(fields.statusCode)}`];
  return [];
}

function credentialLabel(credential: Credential): string {
  switch (credential.kind) {
    case 'caller':
      return credential.caller;
    case 'tampered':
      return `${credential.caller}'s token, tampered`;
    case 'header':
      return `${credential.name}: ${credential.value.slice(0, 40)}`;
  }
}

const clip = (text: string, length = 240) => (text.length > length ? `${text.slice(0, length)}… (${text.length} chars)` : text);

function describeRequest(request: RenderedRequest, generated: GeneratedRequest): string {
  const contentType = request.headers['content-type'];
  const signed = generated.body.kind === 'signed' ? ' [signed]' : '';
  const body = request.payload === undefined ? '' : ` ${contentType ?? '(no content type)'}${signed} ${clip(request.payload)}`;
  return `${request.method} ${clip(request.url, 300)}${body}`;
}

function describeAnswer(answer: Answer): string {
  return `${answer.status} ${answer.contentType} ${clip(answer.body)}`;
}

export function formatFinding(finding: Finding): string {
  return `${finding.operation} #${finding.index} as ${finding.credential}: ${finding.problem}\n    request: ${finding.request}\n    answer: ${finding.answer}`;
}

/** One line per kind of finding (operation, problem, answer code), with how often it occurred and its first example. */
export function groupFindings(findings: Finding[]): { key: string; count: number; first: Finding }[] {
  const groups = new Map<string, { key: string; count: number; first: Finding }>();
  for (const finding of findings) {
    const code = /"code":"([A-Z_]+)"/.exec(finding.answer)?.[1] ?? '';
    const key = `${finding.operation} | ${finding.problem.replace(/refused, yet changed .*/, 'refused, yet changed state')} | ${finding.answer.split(' ')[0]} ${code}`;
    const group = groups.get(key);
    if (group) group.count += 1;
    else groups.set(key, { key, count: 1, first: finding });
  }
  return [...groups.values()];
}
