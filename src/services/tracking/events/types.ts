/** The event types of spec §2.5, in the spec's order: the wire contract the client SDK shares. */
export { EVENT_TYPES } from '../../../client/tracking-types.ts';
export type { EventType } from '../../../client/tracking-types.ts';
