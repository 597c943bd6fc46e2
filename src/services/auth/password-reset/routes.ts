import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { EmailField, MessageResponse, OpaqueTokenField, PasswordField, strictBody } from '../schemas.ts';
import type { PasswordResetService } from './service.ts';

const TAGS = ['auth'];

export function registerPasswordResetRoutes(app: HttpApp, reset: PasswordResetService): void {
  app.post(
    '/api/auth/password/reset',
    {
      schema: {
        tags: TAGS,
        summary: 'Mail a password-reset link',
        description: 'Always 200 with the same body, whether or not the address exists (at most 5 mails per address per hour).',
        body: Type.Object({ email: EmailField }, strictBody),
        response: { 200: MessageResponse },
      },
    },
    async (request) => reset.request(request.body.email, request.ip),
  );

  app.post(
    '/api/auth/password/update',
    {
      schema: {
        tags: TAGS,
        summary: 'Set a new password with the token of the reset link; signs out every session',
        description: '400 INVALID_TOKEN or WEAK_PASSWORD (the link stays usable); 404 USER_NOT_FOUND when the account was deleted.',
        body: Type.Object({ token: OpaqueTokenField, password: PasswordField }, strictBody),
        response: { 200: MessageResponse },
      },
    },
    async (request) => reset.update(request.body.token, request.body.password),
  );
}
