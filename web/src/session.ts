import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { LoggedOutError } from '../../src/client/index.ts';
import type { User } from '../../src/client/index.ts';
import { api, onLoggedOut } from './api.ts';
import { live } from './live.ts';
import { disablePush, ownPushTarget } from './push.ts';
import { queryKeys } from './queryKeys.ts';

/** The script-readable cookie the server sets beside the HttpOnly session cookies and clears with them (src/services/auth/cookies.ts). */
const SIGNED_IN_COOKIE = 'signed_in';

/** Whether this browser holds a sign-in; without one, asking for the profile could only answer 401. */
function holdsSignIn(): boolean {
  return document.cookie.split(';').some((pair) => pair.trim().split('=')[0] === SIGNED_IN_COOKIE);
}

/** The signed-in user (null when signed out), from GET /profile through the cookie and the refresh rule. */
export function useSession() {
  const queryClient = useQueryClient();
  useEffect(
    () =>
      onLoggedOut(() => {
        live.stop();
        queryClient.setQueryData(queryKeys.profile, null);
      }),
    [queryClient],
  );
  return useQuery<User | null>({
    queryKey: queryKeys.profile,
    queryFn: async () => {
      if (!holdsSignIn()) return null;
      try {
        return await api.profile();
      } catch (error) {
        if (error instanceof LoggedOutError) return null;
        throw error;
      }
    },
    staleTime: 60_000,
    retry: false,
  });
}

/**
 * Signs out. Push is turned off first (as far as it can be), while the session can still delete this
 * browser's target: the next person at this browser must not receive this account's notifications.
 */
export async function signOut(queryClient: ReturnType<typeof useQueryClient>): Promise<void> {
  try {
    if (ownPushTarget() !== undefined) await disablePush().catch(() => undefined);
    await api.logout();
  } finally {
    live.stop();
    queryClient.clear();
    queryClient.setQueryData(queryKeys.profile, null);
  }
}
