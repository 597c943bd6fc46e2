import { ApiError, TrackstackClient } from '../../src/client/index.ts';
import { errorWords, paymentRequired } from './i18n.ts';

export interface Settings {
  mapStyleUrl: string;
  socialProviders: string[];
  registrationEnabled: boolean;
}

/** What the server embedded in index.html (src/gateway/web-app.ts); the defaults serve `vite dev`. */
export const settings: Settings = {
  mapStyleUrl: '/map-styles/osm.json',
  socialProviders: [],
  registrationEnabled: true,
  ...(JSON.parse(document.getElementById('trackstack-settings')?.textContent || '{}') as Partial<Settings>),
};

const loggedOutListeners = new Set<() => void>();

export function onLoggedOut(listener: () => void): () => void {
  loggedOutListeners.add(listener);
  return () => loggedOutListeners.delete(listener);
}

/** The one client: the session lives in the server's HttpOnly cookies, never in script-readable storage. */
export const api = new TrackstackClient({
  baseUrl: window.location.origin,
  session: 'cookies',
  onLoggedOut: () => {
    for (const listener of loggedOutListeners) listener();
  },
});

/** What an error means to a person, and whether the plan screen helps. */
export function describeError(error: unknown): { text: string; code: string; plan: boolean } {
  if (error instanceof ApiError) {
    if (error.status === 402) return { text: errorWords[error.code] ?? paymentRequired, code: error.code, plan: true };
    const text = errorWords[error.code] ?? error.message;
    return { text, code: error.code, plan: false };
  }
  return { text: errorWords.NETWORK as string, code: 'NETWORK', plan: false };
}

export function errorCode(error: unknown): string | undefined {
  return error instanceof ApiError ? error.code : undefined;
}
