import { Redis } from 'ioredis';

/** `name` shows in Redis's CLIENT LIST, so an operator can tell whose connection is whose. */
export function connectRedis(url: string, name?: string): Redis {
  // Commands wait while Redis is briefly away instead of failing at once.
  return new Redis(url, { maxRetriesPerRequest: 3, enableAutoPipelining: true, lazyConnect: false, ...(name ? { connectionName: name } : {}) });
}

/**
 * The Redis connections of one process, opened and closed by the platform: one for every command
 * (publishing hints, rate-limit counters) that every module shares, and the one the bus's
 * subscription needs, since a subscribed connection can run no other command.
 */
export interface RedisConnections {
  commands: Redis;
  subscriber: Redis;
  close(): Promise<void>;
}

/** Names them `<EVENT_CHANNEL>:<pid>:commands` and `…:events`. */
export function openRedisConnections(url: string, eventChannel: string): RedisConnections {
  const prefix = `${eventChannel}:${process.pid}`;
  const commands = connectRedis(url, `${prefix}:commands`);
  const subscriber = connectRedis(url, `${prefix}:events`);
  return {
    commands,
    subscriber,
    async close() {
      await Promise.allSettled([commands.quit(), subscriber.quit()]);
    },
  };
}
