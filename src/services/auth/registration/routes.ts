import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { EmailField, MessageEmailResponse, MessageResponse, OpaqueTokenField, PasswordField, strictBody } from '../schemas.ts';
import type { RegistrationService } from './service.ts';

const TAGS = ['auth'];

export function registerRegistrationRoutes(app: HttpApp, registration: RegistrationService): void {
  app.post(
    '/api/auth/register',
    {
      schema: {
        tags: TAGS,
        summary: 'Create an account; a verification e-mail with a link and a 6-digit code follows',
        description:
          '400 TERMS_NOT_ACCEPTED or WEAK_PASSWORD (message names the rule); 403 REGISTRATION_DISABLED; 409 EMAIL_TAKEN; 429 RATE_LIMITED (5 per minute per client).',
        body: Type.Object(
          {
            email: EmailField,
            password: PasswordField,
            name: Type.String({ minLength: 1, maxLength: 255 }),
            termsPrivacyAccepted: Type.Boolean({ description: 'Must be true' }),
          },
          strictBody,
        ),
        response: { 201: MessageEmailResponse },
      },
    },
    async (request, reply) => reply.code(201).send(await registration.register(request.body, request.ip)),
  );

  app.post(
    '/api/auth/verify',
    {
      schema: {
        tags: TAGS,
        summary: 'Verify the e-mail address with the token of the mailed link',
        description: '400 INVALID_TOKEN when the token is unknown, used, replaced by a newer mail, or expired.',
        body: Type.Object({ token: OpaqueTokenField }, strictBody),
        response: { 200: MessageEmailResponse },
      },
    },
    async (request) => registration.verifyLink(request.body.token),
  );

  app.post(
    '/api/auth/verify-code',
    {
      schema: {
        tags: TAGS,
        summary: 'Verify the e-mail address with the mailed 6-digit code',
        description: '400 INVALID_VERIFICATION_CODE when wrong or expired; 5 wrong codes burn it (use the link of the same mail, or ask for a new mail).',
        body: Type.Object({ email: EmailField, code: Type.String({ pattern: '^[0-9]{6}$', description: '6 digits' }) }, strictBody),
        response: { 200: MessageEmailResponse },
      },
    },
    async (request) => registration.verifyCode(request.body.email, request.body.code, request.ip),
  );

  app.post(
    '/api/auth/resend-verification',
    {
      schema: {
        tags: TAGS,
        summary: 'Send the verification e-mail again',
        description: 'Always 200 with the same body. A mail goes out only to an unverified account, at most once per 30 s and 5 times per hour.',
        body: Type.Object({ email: EmailField }, strictBody),
        response: { 200: MessageResponse },
      },
    },
    async (request) => registration.resend(request.body.email, request.ip),
  );
}
