import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { AppError } from '../errors.ts';
import { requireIdentity } from '../../../platform/http/identity.ts';
import { MessageResponse, strictBody, TwoFactorCodeField } from '../schemas.ts';
import type { UserRepository } from '../users/repository.ts';
import type { TwoFactorService } from './service.ts';

const TAGS = ['two-factor'];
const BackupCodes = Type.Array(Type.String(), { description: 'Shown this once; each works once. Stored only as salted hashes.' });
const MailedCodeField = Type.String({ minLength: 1, maxLength: 32, description: 'The 6-digit code from the e-mail' });

export function registerTwoFactorRoutes(app: HttpApp, twoFactor: TwoFactorService, users: UserRepository): void {
  const caller = async (request: FastifyRequest) => {
    const user = await users.findById(requireIdentity(request).userId);
    if (!user) throw new AppError('USER_NOT_FOUND');
    return user;
  };

  app.post(
    '/api/auth/2fa/setup',
    {
      schema: {
        tags: TAGS,
        summary: 'Start TOTP setup: a new secret, held for 10 minutes until confirmed by POST /2fa/verify',
        description: '400 TOTP_ALREADY_ENABLED.',
        response: { 200: Type.Object({ secret: Type.String({ description: 'Base32' }), otpauth_url: Type.String() }) },
      },
    },
    async (request) => twoFactor.setup(await caller(request)),
  );

  app.post(
    '/api/auth/2fa/verify',
    {
      schema: {
        tags: TAGS,
        summary: 'Confirm the setup with a code from the app: two-factor authentication is on',
        description: '400 INVALID_2FA_CODE, TWO_FACTOR_SETUP_REQUIRED (none pending or expired), TOTP_ALREADY_ENABLED; 429 RATE_LIMITED.',
        body: Type.Object({ code: TwoFactorCodeField }, strictBody),
        response: { 200: Type.Object({ message: Type.String(), backup_codes: BackupCodes }) },
      },
    },
    async (request) => ({
      message: 'Two-factor authentication enabled; store the backup codes somewhere safe',
      backup_codes: await twoFactor.verify(requireIdentity(request).userId, request.body.code),
    }),
  );

  app.post(
    '/api/auth/2fa/regenerate',
    {
      schema: {
        tags: TAGS,
        summary: 'Replace the backup codes with 10 new ones; needs a second factor',
        description:
          'The body may be omitted when this session signed in with a second factor less than 10 minutes ago; otherwise it carries a current TOTP, e-mailed (POST /2fa/email/code) or backup code. 400 TWO_FACTOR_NOT_ENABLED, INVALID_2FA_CODE; 403 REAUTHENTICATION_REQUIRED (no code and no recent 2FA sign-in); 429 RATE_LIMITED.',
        body: Type.Object({ code: Type.Optional(TwoFactorCodeField) }, strictBody),
        response: { 200: Type.Object({ message: Type.String(), backup_codes: BackupCodes }) },
      },
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) => ({
      message: 'New backup codes generated; the old ones no longer work',
      backup_codes: await twoFactor.regenerate(requireIdentity(request), request.body.code),
    }),
  );

  app.post(
    '/api/auth/2fa/disable',
    {
      schema: {
        tags: TAGS,
        summary: 'Turn two-factor authentication off, confirmed with a TOTP, e-mailed (POST /2fa/email/code) or backup code',
        description: '400 INVALID_2FA_CODE or TWO_FACTOR_NOT_ENABLED; 429 RATE_LIMITED.',
        body: Type.Object({ code: TwoFactorCodeField }, strictBody),
        response: { 200: Type.Object({ message: Type.String() }) },
      },
    },
    async (request) => {
      await twoFactor.disable(requireIdentity(request).userId, request.body.code);
      return { message: '2FA disabled' };
    },
  );

  app.post(
    '/api/auth/2fa/email/setup',
    {
      schema: {
        tags: TAGS,
        summary: 'Start e-mail as the second factor: a 6-digit code is mailed, to confirm with POST /2fa/email/verify within 10 minutes',
        description: 'At most one mail per 30 s; within that the answer is the same and no mail is sent. 400 TWO_FACTOR_ALREADY_ENABLED (either method is on).',
        response: { 200: MessageResponse },
      },
    },
    async (request) => {
      const user = await caller(request);
      await twoFactor.startEmailSetup(user);
      return { message: `A code is on its way to ${user.email}` };
    },
  );

  app.post(
    '/api/auth/2fa/email/verify',
    {
      schema: {
        tags: TAGS,
        summary: 'Confirm the e-mail setup with the mailed code: two-factor authentication by e-mail is on',
        description:
          '400 INVALID_2FA_CODE (5 wrong codes burn it), TWO_FACTOR_SETUP_REQUIRED (no code pending, expired or burned), TWO_FACTOR_ALREADY_ENABLED; 429 RATE_LIMITED.',
        body: Type.Object({ code: MailedCodeField }, strictBody),
        response: { 200: Type.Object({ message: Type.String(), backup_codes: BackupCodes }) },
      },
    },
    async (request) => ({
      message: 'Two-factor authentication by e-mail enabled; store the backup codes somewhere safe',
      backup_codes: await twoFactor.verifyEmailSetup(requireIdentity(request).userId, request.body.code),
    }),
  );

  app.post(
    '/api/auth/2fa/email/code',
    {
      schema: {
        tags: TAGS,
        summary: 'Mail a 6-digit code for POST /2fa/disable or /2fa/regenerate (e-mail 2FA); it works once, for 5 minutes',
        description: 'At most one mail per 30 s; within that the answer is the same and no mail is sent. 400 TWO_FACTOR_NOT_ENABLED (e-mail 2FA is not on).',
        response: { 200: MessageResponse },
      },
    },
    async (request) => {
      const user = await caller(request);
      await twoFactor.sendConfirmationCode(user);
      return { message: `A code is on its way to ${user.email}` };
    },
  );
}
