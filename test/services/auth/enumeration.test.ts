import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, it } from 'node:test';
import type { Kysely } from 'kysely';
import { createMailer } from '../../../src/platform/mail.ts';
import { MemoryRateLimiter } from '../../../src/platform/rate-limit.ts';
import type { RateDecision, RateLimiter, RateRule } from '../../../src/platform/rate-limit.ts';
import { AuthKeys } from '../../../src/services/auth/keys.ts';
import { LegalDocuments } from '../../../src/services/auth/legal/documents.ts';
import { MailNotifier } from '../../../src/services/auth/mail/notifier.ts';
import { PasswordResetService, RESET_MESSAGE } from '../../../src/services/auth/password-reset/service.ts';
import { RegistrationService, RESEND_MESSAGE } from '../../../src/services/auth/registration/service.ts';
import { SessionRepository } from '../../../src/services/auth/sessions/repository.ts';
import { SessionService } from '../../../src/services/auth/sessions/service.ts';
import type { AuthTables } from '../../../src/services/auth/tables.ts';
import { OneTimeTokenRepository } from '../../../src/services/auth/tokens/one-time-repository.ts';
import { OneTimeTokens } from '../../../src/services/auth/tokens/one-time-tokens.ts';
import { UserRepository } from '../../../src/services/auth/users/repository.ts';
import { AccountService } from '../../../src/services/auth/users/service.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { createUser } from './support/auth.ts';

/**
 * A limiter that holds every hit until released. Only an existing account reaches the limiter, so
 * a held hit marks the point where a request's work starts to depend on the address.
 */
class HeldLimiter implements RateLimiter {
  private readonly inner = new MemoryRateLimiter();
  private releaseAll!: () => void;
  private readonly released = new Promise<void>((resolve) => {
    this.releaseAll = resolve;
  });
  private announceHit!: () => void;
  /** Resolves at the first hit. */
  readonly hit1 = new Promise<void>((resolve) => {
    this.announceHit = resolve;
  });
  hits = 0;

  async hit(rule: RateRule, key: string): Promise<RateDecision> {
    this.hits += 1;
    this.announceHit();
    await this.released;
    return this.inner.hit(rule, key);
  }

  release(): void {
    this.releaseAll();
  }
}

describeEachEngine('auth: reset and resend do not tell whether an address has an account', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off' });
  });
  after(() => server.dispose());

  /** The two services on the server's database, with their own limiter and mail notifier. */
  function services(limiter: RateLimiter) {
    const db = server.database!.db as Kysely<AuthTables>;
    const users = new UserRepository(db);
    const sessions = new SessionService(new SessionRepository(db), server.bus, server.config.ttl);
    const oneTimeTokens = new OneTimeTokens(new OneTimeTokenRepository(db), new AuthKeys('enumeration-test-secret-0123456789'));
    const mail = new MailNotifier(
      createMailer({ smtpUrl: undefined, from: 'test@example.com', outboxDir: path.join(server.dataDir, 'enumeration-outbox'), log: server.app.log }),
      server.app.log,
    );
    const common = { users, oneTimeTokens, mail, limiter, appName: 'Fleet', webUrl: 'https://app.example.com' };
    return {
      mail,
      reset: new PasswordResetService({ ...common, sessions, resetTtlSeconds: 3600 }),
      registration: new RegistrationService({
        ...common,
        accounts: new AccountService(users, sessions, server.bus, server.outbox!),
        legal: new LegalDocuments(server.dataDir),
        registrationEnabled: true,
        verificationTtlSeconds: 3600,
      }),
    };
  }

  const tokenRows = async (userId: number, purpose: string) =>
    (await server.database!.db.selectFrom('one_time_tokens').select('token_hash').where('user_id', '=', userId).where('purpose', '=', purpose).execute()).length;

  /** The answer if it is there before the work for an existing account starts, else 'still working'. */
  const answerOrWork = (answer: unknown, limiter: HeldLimiter) => Promise.race([Promise.resolve(answer), limiter.hit1.then(() => 'still working')]);

  const flows = [
    {
      name: 'password reset',
      purpose: 'password_reset',
      verified: true,
      message: RESET_MESSAGE,
      ask: (both: ReturnType<typeof services>, email: string, ip: string) => both.reset.request(email, ip),
    },
    {
      name: 'resend-verification',
      purpose: 'email_verification',
      verified: false,
      message: RESEND_MESSAGE,
      ask: (both: ReturnType<typeof services>, email: string, ip: string) => both.registration.resend(email, ip),
    },
  ];
  for (const [index, { name, purpose, verified, message, ask }] of flows.entries()) {
    it(`${name} answers before looking the address up; the work for an existing account follows the answer`, async () => {
      const ip = `10.5.0.${index + 1}`;
      const id = await createUser(server, { email: `known-${purpose}@example.com`, verified });
      const limiter = new HeldLimiter();
      const both = services(limiter);

      assert.deepEqual(await answerOrWork(ask(both, `known-${purpose}@example.com`, ip), limiter), { message });
      await limiter.hit1;
      assert.equal(await tokenRows(id, purpose), 0, 'answered before the link was issued');
      limiter.release();
      await both.mail.settled();
      assert.equal(await tokenRows(id, purpose), 1, 'the link was issued after the answer');

      assert.deepEqual(ask(both, `unknown-${purpose}@example.com`, ip), { message });
      await both.mail.settled();
      assert.equal(limiter.hits, 2, 'an unknown address gets no further than the lookup');
      await both.mail.stop();
    });
  }
});
