import { Redis } from 'ioredis';

export function connectRedis(url: string): Redis {
  // Commands wait while Redis is briefly away instead of failing at once.
  return new Redis(url, { maxRetriesPerRequest: 3, enableAutoPipelining: true, lazyConnect: false });
}
