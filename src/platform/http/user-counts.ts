import { Type } from 'typebox';
import { Compile } from 'typebox/compile';
import type { HttpApp } from './app.ts';
import type { InternalClient } from './internal-client.ts';
import { IdParam } from './schemas.ts';

/** How many of one kind of thing a user holds, counted by the module that owns them. */
export type UserCount = (userId: number) => Promise<number>;

/** A module's per-user counts by name (e.g. devices: `devices`, `shares`); billing reports them as usage (docs/plans.md). */
export type UserCounts<Name extends string = string> = Readonly<Record<Name, UserCount>>;

const Counts = Type.Record(Type.String(), Type.Integer({ minimum: 0 }));
const isCounts = Compile(Counts);

/**
 * A module's counts for a process without the module (split mode), at `path` (`…/internal/usage/:userId`):
 * service callers only, one answer with every count of the user.
 */
export function registerUserCountsRoute(app: HttpApp, path: string, counts: UserCounts): void {
  app.get(
    path,
    {
      schema: {
        tags: ['internal'],
        summary: 'How many of each counted thing a user holds (services only, X-Internal-Token)',
        params: Type.Object({ userId: IdParam }),
        response: { 200: Counts },
      },
    },
    async (request) => {
      const { userId } = request.params;
      const entries = await Promise.all(Object.entries(counts).map(async ([name, count]) => [name, await count(userId)] as const));
      return Object.fromEntries(entries);
    },
  );
}

/** The counts `names` of a module in another process, read from its route at `path` with the internal client. */
export function remoteUserCounts<Name extends string>(client: InternalClient, path: string, names: readonly Name[]): UserCounts<Name> {
  // Usage asks for every count of a user at once: those asked together share one request.
  const inFlight = new Map<number, Promise<Record<string, number>>>();
  const fetchCounts = async (userId: number): Promise<Record<string, number>> => {
    const body = await client.json(path.replace(':userId', String(userId)));
    if (!isCounts.Check(body)) throw new Error(`the ${client.service} service answered an unexpected usage body`);
    return body;
  };
  const countsOf = (userId: number): Promise<Record<string, number>> => {
    let answer = inFlight.get(userId);
    if (!answer) {
      answer = fetchCounts(userId).finally(() => inFlight.delete(userId));
      inFlight.set(userId, answer);
    }
    return answer;
  };
  const count = (name: Name): UserCount => async (userId) => {
    const value = (await countsOf(userId))[name];
    if (value === undefined) throw new Error(`the ${client.service} service does not count ${name}`);
    return value;
  };
  return Object.fromEntries(names.map((name) => [name, count(name)])) as UserCounts<Name>;
}
