import type { TwoFactorMethod } from '../tables.ts';
import type { FailureReason } from './failures.ts';
import type { ReturnTo } from './states.ts';

export type SignInEnd =
  | { kind: 'success'; accessToken: string }
  | { kind: 'two-factor'; tempToken: string; type: TwoFactorMethod }
  | { kind: 'error'; reason: FailureReason };

/** Where the callback sends the browser (spec §4.1, DESIGN.md §5.2); WEB_URL has no trailing slash. */
export function signInRedirect(end: SignInEnd, ret: ReturnTo, urls: { webUrl: string; appScheme: string }): string {
  if (ret === 'app') {
    const app = `${urls.appScheme}://oauthredirect`;
    switch (end.kind) {
      case 'success':
        return `${app}?${query({ openid: 'success', access_token: end.accessToken })}`;
      case 'two-factor':
        return `${app}?${query({ openid: '2fa', token: end.tempToken, type: end.type })}`;
      case 'error':
        return `${app}?${query({ openid: 'error', error: end.reason })}`;
    }
  }
  switch (end.kind) {
    case 'success':
      return `${urls.webUrl}?${query({ openid: 'success', access_token: end.accessToken })}`;
    case 'two-factor':
      return `${urls.webUrl}/login/2fa?${query({ token: end.tempToken, type: end.type })}`;
    case 'error':
      return `${urls.webUrl}/login?${query({ error: end.reason })}`;
  }
}

function query(parameters: Record<string, string>): string {
  return new URLSearchParams(parameters).toString();
}
