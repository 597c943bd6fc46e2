/**
 * The wire protocol of /api/socket (docs/live-updates.md): server-to-client JSON text messages and
 * the close codes a client acts on.
 */

export const CLOSE_CODES = {
  /** Server shutting down (RFC 6455 "going away"): reconnect, another instance will answer. */
  goingAway: 1001,
  /** The socket could not be set up (e.g. the database failed): reconnect later. */
  serverError: 1011,
  /** The session was revoked or the access token expired: reconnect with a fresh token. */
  unauthorized: 4401,
  /** The client read too slowly and its unsent messages passed the bound: reconnect. */
  slowConsumer: 4408,
} as const;

export const KEEPALIVE_MESSAGE = '{}';

/**
 * A message whose array holds JSON texts as they are: positions and events reach the socket as
 * JSON already written by the tracking module, so they are concatenated, never parsed again.
 */
export function arrayMessage(key: 'positions' | 'events' | 'commands', jsonTexts: readonly string[]): string {
  return '{"' + key + '":[' + jsonTexts.join(',') + ']}';
}

/** `{"positions": [...]}` from the JSON text of a Position array. */
export function positionsArrayMessage(positionsArrayJson: string): string {
  return '{"positions":' + positionsArrayJson + '}';
}
