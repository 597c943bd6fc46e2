import { isUniqueViolation } from '../users/repository.ts';
import type { UserRepository, UserRow } from '../users/repository.ts';
import type { AccountService } from '../users/service.ts';
import { SocialLoginFailure } from './failures.ts';
import type { ProviderName, ProviderProfile } from './providers/provider.ts';
import type { OpenIdIdentityRow, OpenIdRepository } from './repository.ts';

export interface SocialAccountsDeps {
  repository: OpenIdRepository;
  users: UserRepository;
  accounts: AccountService;
  registrationEnabled: boolean;
}

/**
 * Which account a provider identity signs in to (DESIGN.md §5.2): the one it is linked to; else the
 * account with its e-mail address, linked only when the provider asserts the address verified and the
 * account's own address is verified; else a new account (no password, no terms accepted yet).
 */
export class SocialAccounts {
  private readonly deps: SocialAccountsDeps;
  constructor(deps: SocialAccountsDeps) {
    this.deps = deps;
  }

  async resolve(provider: ProviderName, profile: ProviderProfile): Promise<UserRow> {
    try {
      return await this.resolveOnce(provider, profile);
    } catch (error) {
      // A concurrent first sign-in of the same person created the account or the link first.
      if (!isUniqueViolation(error)) throw error;
      return this.resolveOnce(provider, profile);
    }
  }

  private async resolveOnce(provider: ProviderName, profile: ProviderProfile): Promise<UserRow> {
    const { repository, users } = this.deps;
    const now = Date.now();
    const identity = await repository.findIdentity(provider, profile.subject);
    if (identity) {
      const user = await users.findById(identity.user_id);
      if (user && stillHonoured(identity, user)) {
        await repository.touchIdentity(identity.id, now);
        return user;
      }
      await repository.deleteIdentity(identity.id);
    }

    if (!profile.email) throw new SocialLoginFailure('email_missing', `${provider} gave no e-mail address`);
    const existing = await users.findByEmail(profile.email);
    if (existing) {
      if (!profile.emailVerified || existing.email_verified_at === null) {
        throw new SocialLoginFailure('account_exists', `account ${existing.id} has this address and cannot be linked to ${provider}`);
      }
      return this.link(provider, profile, existing, now);
    }

    if (!this.deps.registrationEnabled) throw new SocialLoginFailure('registration_disabled');
    const created = await this.deps.accounts.create({ email: profile.email, name: profile.name ?? null, emailVerified: profile.emailVerified });
    return this.link(provider, profile, created, now);
  }

  /** The account the identity is linked to now: `user`, unless a parallel sign-in linked it first. */
  private async link(provider: ProviderName, profile: ProviderProfile, user: UserRow, now: number): Promise<UserRow> {
    const linkedId = await this.deps.repository.linkIdentity({
      provider,
      subject: profile.subject,
      user_id: user.id,
      email: profile.email ?? null,
      email_verified: profile.emailVerified ? 1 : 0,
      created_at: now,
      last_used_at: now,
    });
    if (linkedId === user.id) return user;
    const linked = await this.deps.users.findById(linkedId);
    if (!linked) throw new SocialLoginFailure('account_exists', `the ${provider} identity is linked to account ${linkedId}, which is gone`);
    return linked;
  }
}

/**
 * An identity whose provider never asserted the address (Facebook) can only have made its account, with
 * the address unverified. Once someone proves the mailbox (verification mail, password reset), that
 * identity no longer signs in: it may belong to someone who merely typed the address in at the provider.
 */
function stillHonoured(identity: OpenIdIdentityRow, user: UserRow): boolean {
  return identity.email_verified === 1 || user.email_verified_at === null;
}
