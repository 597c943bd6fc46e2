import { randomToken, safeEqual, sha256 } from '../../../platform/crypto.ts';
import type { ProviderName } from './providers/provider.ts';
import type { FlowSecrets } from './providers/provider.ts';
import type { OpenIdRepository } from './repository.ts';

/** How long a sign-in may take at the provider. */
export const STATE_TTL_MS = 600_000;
/** Expired states are kept this long, so a late callback hears state_expired rather than invalid_state. */
const KEEP_EXPIRED_MS = 86_400_000;

export type ReturnTo = 'web' | 'app';

export interface PendingSignIn extends FlowSecrets {
  provider: ProviderName;
  ret: ReturnTo;
}

export type TakenSignIn =
  | { ok: true; signIn: PendingSignIn }
  | { ok: false; reason: 'invalid_state' | 'state_expired'; ret: ReturnTo };

/**
 * The state of each social sign-in, in the database so any instance can finish it: stored hashed,
 * single use, 10 minutes, and accepted only from the browser holding the binding cookie it was made with.
 */
export class SignInStates {
  private readonly repository: OpenIdRepository;
  constructor(repository: OpenIdRepository) {
    this.repository = repository;
  }

  async begin(provider: ProviderName, ret: ReturnTo, browserBinding: string): Promise<FlowSecrets> {
    const now = Date.now();
    const secrets = { state: randomToken(32), nonce: randomToken(32), codeVerifier: randomToken(32) };
    await this.repository.insertState({
      state_hash: sha256(secrets.state),
      provider,
      ret,
      nonce: secrets.nonce,
      code_verifier: secrets.codeVerifier,
      binding_hash: sha256(browserBinding),
      created_at: now,
      expires_at: now + STATE_TTL_MS,
      consumed_at: null,
    });
    return secrets;
  }

  /** Spends the state; unknown, used, expired or from another browser → not ok. */
  async take(state: string | undefined, browserBinding: string | undefined): Promise<TakenSignIn> {
    const row = state ? await this.repository.findState(sha256(state)) : undefined;
    if (!state || !row) return { ok: false, reason: 'invalid_state', ret: 'web' };
    const ret = row.ret === 'app' ? 'app' : 'web';
    if (!browserBinding || !safeEqual(row.binding_hash, sha256(browserBinding)) || row.consumed_at !== null) {
      return { ok: false, reason: 'invalid_state', ret };
    }
    const now = Date.now();
    if (row.expires_at <= now) return { ok: false, reason: 'state_expired', ret };
    if (!(await this.repository.consumeState(row.state_hash, now))) return { ok: false, reason: 'invalid_state', ret };
    return {
      ok: true,
      signIn: { provider: row.provider as ProviderName, ret, state, nonce: row.nonce, codeVerifier: row.code_verifier },
    };
  }

  purgeExpired(): Promise<void> {
    return this.repository.purgeStatesExpiredBefore(Date.now() - KEEP_EXPIRED_MS);
  }
}
