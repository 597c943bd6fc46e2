import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { loadConfig } from '../../src/config.ts';
import { connectRedis } from '../../src/platform/redis.ts';
import { createServer } from '../../src/server.ts';
import { testEngines } from '../support/engines.ts';
import { eventually } from '../support/eventually.ts';
import { TEST_EVENT_CHANNEL, gatewayOnlyEnv, startTestServer } from '../support/server.ts';

const redisUrl = process.env.TEST_REDIS_URL;
const [sqlite] = testEngines();

describe('the Redis connections of a process', { skip: redisUrl ? false : 'TEST_REDIS_URL is not set' }, () => {
  let observer: Redis;
  before(() => {
    observer = connectRedis(redisUrl as string);
  });
  after(() => observer.quit());

  /** Names of the connections Redis has open for EVENT_CHANNEL `channel`, as the platform names them. */
  const connectionsOf = async (channel: string): Promise<string> => {
    const list = (await observer.call('CLIENT', 'LIST')) as string;
    const prefix = `${channel}:${process.pid}:`;
    return list
      .split('\n')
      .map((line) => /(?:^| )name=(\S*)/.exec(line)?.[1] ?? '')
      .filter((name) => name.startsWith(prefix))
      .map((name) => name.slice(prefix.length))
      .sort()
      .join(',');
  };
  /** Connections open and close a moment after the calls that ask for it return. */
  const connectionsBecome = async (channel: string, expected: string) => {
    await eventually(async () => (await connectionsOf(channel)) === expected, expected, 5000).catch(() => {});
    assert.equal(await connectionsOf(channel), expected);
  };

  it('every module of a process shares one command connection; pub/sub adds one; closing releases both', async () => {
    const channel = `${TEST_EVENT_CHANNEL}:all-modules`;
    // Rate limits on: auth and devices count in Redis, through the platform's connection.
    const server = await startTestServer(sqlite as NonNullable<typeof sqlite>, { REDIS_URL: redisUrl as string, EVENT_CHANNEL: channel, RATE_LIMITS: 'on' });
    try {
      const preview = await server.app.inject({ method: 'POST', url: '/api/devices/validate-token', payload: { token: 'ZZZZ-ZZZZ-ZZZZ' } });
      assert.equal(preview.statusCode, 200);
      const login = await server.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'nobody@example.com', password: 'Not-The-Password-1' } });
      assert.equal(login.statusCode, 401);
      assert.ok((await observer.keys(`${channel}:rate:*`)).length >= 2, 'the devices and auth counters are in Redis');
      await connectionsBecome(channel, 'commands,events');
    } finally {
      await server.dispose();
    }
    await connectionsBecome(channel, '');
    await observer.del(...(await observer.keys(`${channel}:rate:*`)));
  });

  it('a gateway-only process opens the same two', async () => {
    const channel = `${TEST_EVENT_CHANNEL}:gateway`;
    // The services without a gateway of their own, which would keep their internal routes from the gateway-only process.
    const services = await startTestServer(sqlite as NonNullable<typeof sqlite>, {
      SERVICES: 'auth,devices,tracking,billing',
      REDIS_URL: redisUrl as string,
      EVENT_CHANNEL: channel,
      RATE_LIMITS: 'off',
    });
    try {
      await services.app.listen({ port: 0, host: '127.0.0.1' });
      const url = `http://127.0.0.1:${(services.app.server.address() as { port: number }).port}`;
      await connectionsBecome(channel, 'commands,events');
      const gateway = await createServer(
        loadConfig(gatewayOnlyEnv(url, services.dataDir, { REDIS_URL: redisUrl as string, EVENT_CHANNEL: channel })),
      );
      try {
        // Both processes are this test's, so their names coincide: the gateway's count on top of the services'.
        await connectionsBecome(channel, 'commands,commands,events,events');
      } finally {
        await gateway.close();
      }
      await connectionsBecome(channel, 'commands,events');
    } finally {
      await services.dispose();
    }
  });
});
