/** The Trackstack client SDK: typed auth calls and the refresh rule. Imports no server code. */
export { ApiError, AuthClient, LoggedOutError } from './auth-client.ts';
export type { AuthClientOptions } from './auth-client.ts';
export { MemoryTokenStore, readClaims } from './tokens.ts';
export type { AccessTokenClaims, StoredTokens, TokenStore } from './tokens.ts';
export type * from './types.ts';
