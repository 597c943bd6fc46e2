/** The Trackstack client SDK: typed calls to the public API, the refresh rule and the live socket. Imports no server code. */
export { ApiError, AuthClient, LoggedOutError } from './auth-client.ts';
export type { AuthClientOptions } from './auth-client.ts';
export { LiveSocket } from './live-socket.ts';
export type { LiveSocketOptions, LiveStatus } from './live-socket.ts';
export { MemoryTokenStore, readClaims } from './tokens.ts';
export type { AccessTokenClaims, StoredTokens, TokenStore } from './tokens.ts';
export { TrackstackClient } from './trackstack-client.ts';
export { EVENT_TYPES } from './tracking-types.ts';
export type * from './tracking-types.ts';
export type * from './plan-command-types.ts';
export type * from './notification-types.ts';
export type * from './report-types.ts';
export type * from './types.ts';
