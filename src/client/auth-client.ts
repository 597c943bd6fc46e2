import { MemoryTokenStore, readClaims } from './tokens.ts';
import type { AccessTokenClaims, StoredTokens, TokenStore } from './tokens.ts';
import type {
  AccessChanges,
  BackupCodesResponse,
  ErrorBody,
  LegalDocument,
  Login2FARequiredResponse,
  LoginResponse,
  LoginResult,
  MessageEmailResponse,
  MessageResponse,
  ProfileChanges,
  RegisterRequest,
  TwoFactorSetupResponse,
  User,
  UserPage,
  DeadLetter,
  DeadLetterPage,
} from './types.ts';

export interface AuthClientOptions {
  /** Where the API is, e.g. https://tracker.example.com (no trailing /api). */
  baseUrl: string;
  store?: TokenStore;
  fetch?: typeof fetch;
  /** Browsers: 'include' sends the HttpOnly cookies the server sets. */
  credentials?: 'omit' | 'same-origin' | 'include';
  /** Called once the client has dropped its tokens because a refresh failed: show the login screen. */
  onLoggedOut?: () => void;
  /**
   * 'cookies' (browsers on the API's site): the server's HttpOnly cookies carry the session, so the
   * client keeps no token at all and refreshes with the refresh_token cookie. Implies credentials 'include'.
   */
  session?: 'tokens' | 'cookies';
}

/** Paths that never get an Authorization header (spec §5.4). */
const PUBLIC_PREFIXES = [
  '/api/auth/login',
  '/api/auth/register',
  '/api/auth/verify-code',
  '/api/auth/verify',
  '/api/auth/resend-verification',
  '/api/auth/refresh',
  '/api/auth/openid',
  '/api/auth/password',
  '/api/legal',
];

/** A non-2xx answer, with the server's stable error code. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly body: ErrorBody | undefined;

  constructor(status: number, body: ErrorBody | undefined) {
    super(body?.message ?? `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = body?.code ?? 'UNKNOWN';
    this.body = body;
  }
}

/** The refresh failed: the client has dropped its tokens; the user must sign in again. */
export class LoggedOutError extends ApiError {
  constructor(status: number, body: ErrorBody | undefined) {
    super(status, body);
    this.name = 'LoggedOutError';
  }
}

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/**
 * Typed calls to the auth API with the refresh rule of spec §5.8: on a 401 the client refreshes
 * once (concurrent 401s share that refresh), keeps its refresh token when none comes back, and
 * retries the request once marked `Authorization-Retry`; a second 401 ends there. A refresh the
 * server refuses drops the tokens and reports logged-out. Nothing is refreshed ahead of expiry.
 */
export class AuthClient {
  private readonly baseUrl: string;
  private readonly store: TokenStore;
  private readonly fetchImpl: typeof fetch;
  private readonly credentials: 'omit' | 'same-origin' | 'include' | undefined;
  private readonly onLoggedOut: (() => void) | undefined;
  private readonly cookieSession: boolean;
  private refreshing: Promise<StoredTokens> | undefined;
  /** Counts completed refreshes: a 401 to a request sent before the latest one is retried without another. */
  private refreshCount = 0;

  constructor(options: AuthClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/$/, '');
    this.store = options.store ?? new MemoryTokenStore();
    // Called as a plain function: a browser refuses window.fetch called on another object ("Illegal invocation").
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));
    this.cookieSession = options.session === 'cookies';
    this.credentials = this.cookieSession ? 'include' : options.credentials;
    this.onLoggedOut = options.onLoggedOut;
  }

  /** The API's base URL, as given. */
  apiBase(): string {
    return this.baseUrl;
  }

  // Sign-in and tokens

  async login(email: string, password: string): Promise<LoginResult> {
    const response = await this.send('POST', '/api/auth/login', { email, password });
    if (response.status === 202) {
      const body = (await response.json()) as Login2FARequiredResponse;
      return { kind: 'two-factor', tempToken: body.temp_token, type: body.type, message: body.message };
    }
    const body = await this.parse<LoginResponse>(response);
    if (!this.cookieSession) await this.store.save({ accessToken: body.accessToken, refreshToken: body.refreshToken });
    return { kind: 'signed-in', user: body.user, expiresIn: body.expiresIn ?? 3600 };
  }

  /** The second step: the server answers the User and sets its tokens as cookies, which the client keeps when it can read them. */
  async completeTwoFactor(tempToken: string, code: string): Promise<User> {
    const response = await this.send('POST', '/api/auth/2fa/login', { temp_token: tempToken, code });
    const user = await this.parse<User>(response);
    const cookies = readSetCookies(response);
    if (cookies.access_token) await this.store.save({ accessToken: cookies.access_token, refreshToken: cookies.refresh_token });
    return user;
  }

  /** After a login answered `type: 'email'`: mails a new code (at most every 30 s; the answer is the same either way). */
  resendTwoFactorCode(tempToken: string): Promise<MessageResponse> {
    return this.publicCall('POST', '/api/auth/2fa/email/resend', { temp_token: tempToken });
  }

  async logout(): Promise<void> {
    try {
      await this.request<void>('DELETE', '/api/auth/logout');
    } finally {
      await this.store.clear();
    }
  }

  async isLoggedIn(): Promise<boolean> {
    return (await this.store.load()) !== undefined;
  }

  /** userId and email from the access token, without a request (spec §5.9). */
  async claims(): Promise<AccessTokenClaims | undefined> {
    const tokens = await this.store.load();
    return tokens && readClaims(tokens.accessToken);
  }

  /** Whether the access token ends within `windowSeconds` (spec §8: 300), e.g. to warn; the client never refreshes on it. */
  async isExpiringSoon(windowSeconds = 300): Promise<boolean> {
    const claims = await this.claims();
    return claims !== undefined && claims.exp * 1000 - Date.now() <= windowSeconds * 1000;
  }

  // Registration and passwords (public)

  register(request: RegisterRequest): Promise<MessageEmailResponse> {
    return this.publicCall('POST', '/api/auth/register', request);
  }

  verifyEmail(token: string): Promise<MessageEmailResponse> {
    return this.publicCall('POST', '/api/auth/verify', { token });
  }

  verifyCode(email: string, code: string): Promise<MessageEmailResponse> {
    return this.publicCall('POST', '/api/auth/verify-code', { email, code });
  }

  resendVerification(email: string): Promise<MessageResponse> {
    return this.publicCall('POST', '/api/auth/resend-verification', { email });
  }

  requestPasswordReset(email: string): Promise<MessageResponse> {
    return this.publicCall('POST', '/api/auth/password/reset', { email });
  }

  updatePassword(token: string, password: string): Promise<MessageResponse> {
    return this.publicCall('POST', '/api/auth/password/update', { token, password });
  }

  legalDocument(type: 'terms' | 'privacy'): Promise<LegalDocument> {
    return this.publicCall('GET', `/api/legal/${type}`);
  }

  // The signed-in user

  profile(): Promise<User> {
    return this.request('GET', '/api/auth/profile');
  }

  updateProfile(changes: ProfileChanges): Promise<User> {
    return this.request('PUT', '/api/auth/profile', changes);
  }

  changePassword(currentPassword: string, newPassword: string): Promise<MessageResponse> {
    return this.request('POST', '/api/auth/change-password', { currentPassword, newPassword });
  }

  async deleteAccount(): Promise<void> {
    await this.request<void>('DELETE', '/api/auth/account');
    await this.store.clear();
  }

  acceptTerms(version: string): Promise<User> {
    return this.request('POST', '/api/legal/accept', { version });
  }

  twoFactorSetup(): Promise<TwoFactorSetupResponse> {
    return this.request('POST', '/api/auth/2fa/setup');
  }

  twoFactorVerify(code: string): Promise<BackupCodesResponse> {
    return this.request('POST', '/api/auth/2fa/verify', { code });
  }

  /** Without `code` only within 10 minutes of a sign-in that passed 2FA; otherwise a TOTP, e-mailed or backup code. */
  twoFactorRegenerate(code?: string): Promise<BackupCodesResponse> {
    return this.request('POST', '/api/auth/2fa/regenerate', code === undefined ? undefined : { code });
  }

  twoFactorDisable(code: string): Promise<MessageResponse> {
    return this.request('POST', '/api/auth/2fa/disable', { code });
  }

  /** E-mail as the second factor: mails a code that twoFactorEmailVerify confirms. */
  twoFactorEmailSetup(): Promise<MessageResponse> {
    return this.request('POST', '/api/auth/2fa/email/setup');
  }

  twoFactorEmailVerify(code: string): Promise<BackupCodesResponse> {
    return this.request('POST', '/api/auth/2fa/email/verify', { code });
  }

  /** With e-mail 2FA on: mails a code for twoFactorDisable or twoFactorRegenerate. */
  twoFactorEmailCode(): Promise<MessageResponse> {
    return this.request('POST', '/api/auth/2fa/email/code');
  }

  // Administrators

  listUsers(query: { search?: string; page?: number; limit?: number } = {}): Promise<UserPage> {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
    const suffix = params.size > 0 ? `?${params}` : '';
    return this.request('GET', `/api/auth/users${suffix}`);
  }

  updateUser(id: number, changes: AccessChanges): Promise<User> {
    return this.request('PUT', `/api/auth/users/${id}`, changes);
  }

  /** Durable work that failed past its attempt cap, newest first. */
  listDeadLetters(query: { queue?: string; consumer?: string; page?: number; limit?: number } = {}): Promise<DeadLetterPage> {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
    const suffix = params.size > 0 ? `?${params}` : '';
    return this.request('GET', `/api/admin/dead-letters${suffix}`);
  }

  /** Asks for a dead letter to be queued again; it leaves the list once its queue has taken it back. */
  retryDeadLetter(id: number): Promise<DeadLetter> {
    return this.request('POST', `/api/admin/dead-letters/${id}/retry`);
  }

  /** Any bearer endpoint of the API (devices, tracking, billing too), with the refresh rule. */
  async request<T>(method: Method, path: string, body?: unknown): Promise<T> {
    return this.parse<T>(await this.authorized(method, path, body));
  }

  /** A GET whose answer is a file (a report's CSV or XLSX) in the `accept` media type: its bytes, with the refresh rule. */
  async download(path: string, accept: string): Promise<Uint8Array> {
    const response = await this.authorized('GET', path, undefined, { accept });
    if (!response.ok) throw new ApiError(response.status, await errorBody(response));
    return new Uint8Array(await response.arrayBuffer());
  }

  /** The response to a bearer request: once, and again after one refresh when the first answer is 401. */
  private async authorized(method: Method, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
    const used = await this.store.load();
    const refreshesBefore = this.refreshCount;
    const first = await this.send(method, path, body, used?.accessToken, headers);
    if (first.status !== 401) return first;
    await first.body?.cancel();

    // Another request refreshed while this one was on its way: retry with its token, no second refresh.
    let accessToken: string | undefined;
    if (this.cookieSession) {
      if (this.refreshCount === refreshesBefore) await this.refreshShared();
    } else {
      const current = await this.store.load();
      accessToken = (current && current.accessToken !== used?.accessToken ? current : await this.refreshShared()).accessToken;
    }
    return this.send(method, path, body, accessToken, { ...headers, 'authorization-retry': 'true' });
  }

  protected publicCall<T>(method: Method, path: string, body?: unknown): Promise<T> {
    return this.send(method, path, body).then((response) => this.parse<T>(response));
  }

  private refreshShared(): Promise<StoredTokens> {
    this.refreshing ??= this.refresh().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  /** One POST /refresh. A refusal drops the tokens and reports logged-out; a network failure is thrown as it is. */
  private async refresh(): Promise<StoredTokens> {
    if (this.cookieSession) return this.refreshCookies();
    const stored = await this.store.load();
    if (!stored?.refreshToken) return this.loggedOut(401, undefined);
    const response = await this.send('POST', '/api/auth/refresh', { refreshToken: stored.refreshToken });
    if (response.status >= 400 && response.status < 500) return this.loggedOut(response.status, await errorBody(response));
    const body = await this.parse<LoginResponse>(response);
    const tokens = { accessToken: body.accessToken, refreshToken: body.refreshToken ?? stored.refreshToken };
    await this.store.save(tokens);
    this.refreshCount += 1;
    return tokens;
  }

  /** The refresh_token cookie goes with the request and the new cookies come back; the client holds no token. */
  private async refreshCookies(): Promise<StoredTokens> {
    const response = await this.send('POST', '/api/auth/refresh');
    if (response.status >= 400 && response.status < 500) return this.loggedOut(response.status, await errorBody(response));
    await this.parse<LoginResponse>(response);
    this.refreshCount += 1;
    return { accessToken: '' };
  }

  private async loggedOut(status: number, body: ErrorBody | undefined): Promise<never> {
    await this.store.clear();
    this.onLoggedOut?.();
    throw new LoggedOutError(status, body);
  }

  private send(method: Method, path: string, requestBody?: unknown, accessToken?: string, extraHeaders: Record<string, string> = {}): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json', ...extraHeaders };
    // The gateway takes a cookie-authenticated change only as JSON (its CSRF guard), so such a request always carries a body.
    const body = requestBody === undefined && this.cookieSession && method !== 'GET' ? {} : requestBody;
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (accessToken && !PUBLIC_PREFIXES.some((prefix) => path.startsWith(prefix))) headers.authorization = `Bearer ${accessToken}`;
    return this.fetchImpl(`${this.baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      ...(this.credentials ? { credentials: this.credentials } : {}),
    });
  }

  private async parse<T>(response: Response): Promise<T> {
    if (!response.ok) throw new ApiError(response.status, await errorBody(response));
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }
}

async function errorBody(response: Response): Promise<ErrorBody | undefined> {
  try {
    return (await response.json()) as ErrorBody;
  } catch {
    return undefined;
  }
}

/** Set-Cookie values, where the platform lets a client read them (Node, React Native; not browsers). */
function readSetCookies(response: Response): Record<string, string> {
  const lines = typeof response.headers.getSetCookie === 'function' ? response.headers.getSetCookie() : [];
  const cookies: Record<string, string> = {};
  for (const line of lines) {
    const [pair] = line.split(';');
    const eq = pair?.indexOf('=') ?? -1;
    if (pair && eq > 0) cookies[pair.slice(0, eq).trim()] = decodeURIComponent(pair.slice(eq + 1).trim());
  }
  return cookies;
}
