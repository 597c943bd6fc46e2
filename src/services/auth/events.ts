/** Domain events the auth module publishes. */
declare module '../../platform/bus.ts' {
  interface DomainEvents {
    /** Sessions whose access tokens must be refused from now on, each until its last token has expired. */
    'auth.sessions.revoked': { sessions: RevokedSession[] };
    /** An account is gone: its owner's data in every module goes with it (subscription records stay). */
    'auth.user.deleted': { userId: number };
    /** A field that UserAccess carries (flags, expiration, e-mail, name) changed: user directories drop what they remember of the user. */
    'auth.user.changed': { userId: number };
  }
}

export interface RevokedSession {
  id: string;
  /** Epoch milliseconds after which no access token of this session can still be valid. */
  until: number;
}
