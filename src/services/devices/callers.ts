import { AppError } from './errors.ts';
import type { UserAccess, UserDirectory } from '../auth/users/directory.ts';

/** The user behind a request, as the auth module's directory knows them. */
export async function resolveCaller(users: UserDirectory, userId: number): Promise<UserAccess> {
  const user = await users.get(userId);
  if (!user) throw new AppError('UNAUTHORIZED', 'The account no longer exists');
  return user;
}

/** Read-only accounts (readonly or deviceReadonly) may look at devices but not create, change, share or claim them. */
export function assertMayChangeDevices(user: UserAccess): void {
  if (!user.administrator && (user.readonly || user.deviceReadonly)) {
    throw new AppError('FORBIDDEN', 'This account may not change devices');
  }
}

/**
 * In a process without the auth module every user lookup fails with 502 until a directory that
 * reaches the auth service is passed in; the health endpoint keeps answering.
 */
export const unavailableUserDirectory: UserDirectory = {
  get: () => Promise.reject(new AppError('UPSTREAM_UNAVAILABLE', 'The user directory of the auth service is not available to this process')),
  findByEmail: () =>
    Promise.reject(new AppError('UPSTREAM_UNAVAILABLE', 'The user directory of the auth service is not available to this process')),
};
