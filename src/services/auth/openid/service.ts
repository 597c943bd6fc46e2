import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../errors.ts';
import type { ErrorCode } from '../../../platform/http/errors.ts';
import type { RateLimiter } from '../../../platform/rate-limit.ts';
import type { ClientInfo, LoginOutcome, SignedIn, SignInService } from '../login/service.ts';
import { AUTH_RATE_RULES, enforceLimit } from '../rate-limits.ts';
import type { SocialAccounts } from './accounts.ts';
import { SocialLoginFailure } from './failures.ts';
import type { FailureReason } from './failures.ts';
import type { ConfiguredProviders } from './providers/registry.ts';
import type { ProviderName } from './providers/provider.ts';
import { signInRedirect } from './redirects.ts';
import type { SignInEnd } from './redirects.ts';
import type { ReturnTo, SignInStates } from './states.ts';

export interface OpenIdServiceDeps {
  providers: ConfiguredProviders;
  states: SignInStates;
  accounts: SocialAccounts;
  signIn: SignInService;
  limiter: RateLimiter;
  webUrl: string;
  appScheme: string;
  log: FastifyBaseLogger;
}

export interface Redirect {
  location: string;
  /** 307 to the provider (spec §4.1); 303 for every other redirect. */
  status: 303 | 307;
}

export interface CallbackOutcome {
  location: string;
  /** The session to set as cookies: a web sign-in that completed. */
  session: SignedIn | undefined;
}

/** Provider `error` values that mean the user declined (Google, Facebook, oidc-provider; Apple). */
const DECLINED = new Set(['access_denied', 'user_cancelled_authorize']);

/** How the mobile exchange answers a failure the redirect flow reports as a reason. */
const TOKEN_EXCHANGE_ERRORS: Partial<Record<FailureReason, ErrorCode>> = {
  email_missing: 'ID_TOKEN_EMAIL_UNVERIFIED',
  email_unverified: 'ID_TOKEN_EMAIL_UNVERIFIED',
  account_exists: 'OPENID_ACCOUNT_EXISTS',
  registration_disabled: 'REGISTRATION_DISABLED',
};

/** Social login (spec §4.1, DESIGN.md §5.2): the redirect flow of each provider and Google's mobile id_token exchange. */
export class OpenIdService {
  private readonly deps: OpenIdServiceDeps;
  constructor(deps: OpenIdServiceDeps) {
    this.deps = deps;
  }

  /** GET /openid/auth: stores the flow's state and sends the browser to the provider. */
  async start(providerName: ProviderName, ret: ReturnTo, browserBinding: string, clientIp: string): Promise<Redirect> {
    await enforceLimit(this.deps.limiter, AUTH_RATE_RULES.socialSignIn, `start|${clientIp}`);
    const provider = this.deps.providers.redirect.get(providerName);
    if (!provider) throw new AppError('OPENID_PROVIDER_NOT_CONFIGURED', `Sign-in with ${providerName} is not configured`);
    const flow = await this.deps.states.begin(providerName, ret, browserBinding);
    try {
      return { location: (await provider.authorizationUrl(flow)).href, status: 307 };
    } catch (error) {
      this.deps.log.warn({ err: error, provider: providerName }, 'social sign-in: the provider cannot be reached');
      return { location: this.redirect({ kind: 'error', reason: 'provider_unavailable' }, ret), status: 303 };
    }
  }

  /** GET or POST /openid/callback: every outcome is a redirect, failures with a reason. */
  async finish(callback: URLSearchParams, browserBinding: string | undefined, client: ClientInfo): Promise<CallbackOutcome> {
    const taken = await this.deps.states.take(callback.get('state') ?? undefined, browserBinding);
    if (!taken.ok) {
      this.deps.log.info({ reason: taken.reason }, 'social sign-in refused: state');
      return { location: this.redirect({ kind: 'error', reason: taken.reason }, taken.ret), session: undefined };
    }
    const { signIn: pending } = taken;
    try {
      const providerError = callback.get('error');
      if (providerError !== null) {
        throw new SocialLoginFailure(DECLINED.has(providerError) ? 'cancelled' : 'provider_error', `the provider answered error=${providerError.slice(0, 64)}`);
      }
      const provider = this.deps.providers.redirect.get(pending.provider);
      if (!provider) throw new SocialLoginFailure('provider_unavailable', `${pending.provider} is no longer configured`);
      const profile = await provider.complete(callback, pending);
      const user = await this.deps.accounts.resolve(pending.provider, profile);
      const outcome = await this.deps.signIn.signInIdentified(user, client, { requireVerified: false });
      if (outcome.kind === 'two-factor') {
        return { location: this.redirect({ kind: 'two-factor', tempToken: outcome.tempToken, type: outcome.type }, pending.ret), session: undefined };
      }
      return {
        location: this.redirect({ kind: 'success', accessToken: outcome.session.accessToken }, pending.ret),
        session: pending.ret === 'web' ? outcome.session : undefined,
      };
    } catch (error) {
      const reason = this.failureReason(error, pending.provider);
      return { location: this.redirect({ kind: 'error', reason }, pending.ret), session: undefined };
    }
  }

  /** POST /openid/token: a Google id_token the app obtained → a session, or the second factor. */
  async exchangeIdToken(provider: string, idToken: string, client: ClientInfo): Promise<LoginOutcome> {
    await enforceLimit(this.deps.limiter, AUTH_RATE_RULES.socialSignIn, `token|${client.ip}`);
    if (provider !== 'google') throw new AppError('OPENID_PROVIDER_UNSUPPORTED');
    const verifier = this.deps.providers.googleIdTokens;
    if (!verifier) throw new AppError('OPENID_PROVIDER_NOT_CONFIGURED', 'OIDC_GOOGLE_AUDIENCES (or OIDC_GOOGLE_CLIENT_ID) is not set');
    const profile = await verifier.verify(idToken);
    try {
      const user = await this.deps.accounts.resolve('google', profile);
      return await this.deps.signIn.signInIdentified(user, client, { requireVerified: false });
    } catch (error) {
      const code = error instanceof SocialLoginFailure ? TOKEN_EXCHANGE_ERRORS[error.reason] : undefined;
      throw code ? new AppError(code) : error;
    }
  }

  purgeExpired(): Promise<void> {
    return this.deps.states.purgeExpired();
  }

  private redirect(end: SignInEnd, ret: ReturnTo): string {
    return signInRedirect(end, ret, this.deps);
  }

  private failureReason(error: unknown, provider: ProviderName): FailureReason {
    const { log } = this.deps;
    if (error instanceof SocialLoginFailure) {
      const fault = ['provider_unavailable', 'exchange_failed', 'invalid_id_token'].includes(error.reason);
      log[fault ? 'warn' : 'info']({ provider, reason: error.reason, detail: error.message }, 'social sign-in failed');
      return error.reason;
    }
    if (error instanceof AppError && error.code === 'ACCOUNT_DISABLED') return 'account_disabled';
    if (error instanceof AppError && error.code === 'ACCOUNT_EXPIRED') return 'account_expired';
    log.error({ err: error, provider }, 'social sign-in failed');
    return 'server_error';
  }
}
