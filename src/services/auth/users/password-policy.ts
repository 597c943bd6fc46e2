import { dictionary } from '@zxcvbn-ts/language-common';

export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 128;

const COMMON_PASSWORDS = new Set(dictionary['passwords-common'].map((password) => password.toLowerCase()));

/**
 * Spec §5.10 (8+ characters with an uppercase letter, a lowercase letter and a digit), at most 128
 * characters, and not one of the most common passwords (compared case-insensitively).
 * Returns the first rule the password breaks, as a sentence for the client, or undefined.
 */
export function passwordProblem(password: string): string | undefined {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH) return `The password must have at least ${PASSWORD_MIN_LENGTH} characters`;
  if (length > PASSWORD_MAX_LENGTH) return `The password must have at most ${PASSWORD_MAX_LENGTH} characters`;
  if (!/\p{Lu}/u.test(password)) return 'The password must contain an uppercase letter';
  if (!/\p{Ll}/u.test(password)) return 'The password must contain a lowercase letter';
  if (!/\p{Nd}/u.test(password)) return 'The password must contain a digit';
  if (COMMON_PASSWORDS.has(password.toLowerCase())) return 'The password is too common; choose one that is harder to guess';
  return undefined;
}
