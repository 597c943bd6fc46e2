import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { errorResponses } from '../../../platform/http/schemas.ts';
import { AppError } from '../errors.ts';
import { requireIdentity } from '../../../platform/http/identity.ts';
import { clearSessionCookies, clientInfo, presentedAccessToken, REFRESH_TOKEN_COOKIE, setSessionCookies } from '../cookies.ts';
import type { CookiePolicy } from '../cookies.ts';
import type { ProfileService } from '../account/service.ts';
import {
  EmailField,
  Login2FARequiredResponse,
  LoginResponse,
  MessageResponse,
  NoContent,
  OpaqueTokenField,
  PasswordField,
  strictBody,
  TwoFactorCodeField,
  User,
} from '../schemas.ts';
import type { LoginOutcome, SignedIn, SignInService } from './service.ts';

export interface SignInRouteDeps {
  signIn: SignInService;
  profiles: ProfileService;
  cookies: CookiePolicy;
}

const TAGS = ['auth'];

export function registerSignInRoutes(app: HttpApp, deps: SignInRouteDeps): void {
  const { signIn, profiles, cookies } = deps;

  const loginBody = (session: SignedIn) => signedInBody(session, profiles);

  app.post(
    '/api/auth/login',
    {
      schema: {
        tags: TAGS,
        summary: 'Sign in with e-mail and password',
        description:
          '200 with tokens (and the access_token and refresh_token cookies), or 202 when the account has two-factor authentication: then POST /2fa/login with temp_token. 401 INVALID_CREDENTIALS; 403 ACCOUNT_DISABLED, ACCOUNT_EXPIRED or EMAIL_NOT_VERIFIED (only after a correct password); 429 RATE_LIMITED.',
        body: Type.Object({ email: EmailField, password: PasswordField }, strictBody),
        response: { 200: LoginResponse, 202: Login2FARequiredResponse, ...errorResponses(401, 403, 429) },
      },
    },
    async (request, reply) => {
      const outcome = await signIn.login(request.body.email, request.body.password, clientInfo(request));
      return sendLoginOutcome(reply, outcome, { cookies, profiles });
    },
  );

  app.post(
    '/api/auth/2fa/login',
    {
      schema: {
        tags: TAGS,
        summary: 'Complete a sign-in with a TOTP code, the e-mailed code or a backup code',
        description:
          'Answers the User and sets the access_token and refresh_token cookies (a bearer client reads its tokens from them). 401 INVALID_2FA_LOGIN_CODE for a wrong code; 401 TEMP_TOKEN_EXPIRED once the temp_token expired (5 minutes) or 5 wrong codes burned it.',
        body: Type.Object({ temp_token: OpaqueTokenField, code: TwoFactorCodeField }, strictBody),
        response: { 200: User, ...errorResponses(401) },
      },
    },
    async (request, reply) => {
      const session = await signIn.completeTwoFactor(request.body.temp_token, request.body.code, clientInfo(request));
      setSessionCookies(reply, cookies, session);
      return profiles.view(session.user);
    },
  );

  app.post(
    '/api/auth/2fa/email/resend',
    {
      schema: {
        tags: TAGS,
        summary: 'Mail a new sign-in code for a 202 answer of type email; the previous code stops working',
        description:
          'At most one code per 30 s per temp_token: within that (and for a totp sign-in) the answer is the same and no mail is sent. 401 TEMP_TOKEN_EXPIRED once the temp_token is used, expired or burned.',
        body: Type.Object({ temp_token: OpaqueTokenField }, strictBody),
        response: { 200: MessageResponse, ...errorResponses(401) },
      },
    },
    async (request) => {
      await signIn.resendTwoFactorCode(request.body.temp_token);
      return { message: 'If this sign-in waits for an e-mailed code, a new one is on its way' };
    },
  );

  app.post(
    '/api/auth/refresh',
    {
      schema: {
        tags: TAGS,
        summary: 'Exchange a refresh token for new tokens (rotation)',
        description:
          'The token comes from the body or the refresh_token cookie; the body may be omitted. Each refresh token works once: it is replaced by the one returned. Presenting a replaced token again within 10 s answers the same replacement; later it ends the whole sign-in (401 REFRESH_TOKEN_REUSED).',
        body: Type.Object({ refreshToken: Type.Optional(OpaqueTokenField) }, strictBody),
        response: { 200: LoginResponse, ...errorResponses(401, 403) },
      },
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const token = request.body.refreshToken ?? request.cookies[REFRESH_TOKEN_COOKIE];
      try {
        if (!token) throw new AppError('UNAUTHORIZED', 'No refresh token in the body or the refresh_token cookie');
        const session = await signIn.refresh(token);
        setSessionCookies(reply, cookies, session);
        return await loginBody(session);
      } catch (error) {
        if (error instanceof AppError && (error.statusCode === 401 || error.statusCode === 403)) clearSessionCookies(reply, cookies);
        throw error;
      }
    },
  );

  app.delete(
    '/api/auth/logout',
    {
      schema: {
        tags: TAGS,
        summary: 'Sign out: the access and refresh tokens of this session stop working at once',
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      await signIn.logout(requireIdentity(request).sessionId);
      clearSessionCookies(reply, cookies);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/auth/validate',
    {
      schema: {
        tags: TAGS,
        summary: 'Token check for a reverse proxy (nginx auth_request, Traefik forwardAuth); GET or HEAD',
        description:
          'Reads the access_token cookie (or a bearer header). 200 with X-User-Id and X-User-Email when the token is valid and the account active, else 401. Never cached. See docs/reverse-proxy.md.',
        response: { 200: Type.Object({ userId: Type.Integer(), email: Type.String() }), ...errorResponses(401) },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const subject = await signIn.validate({ identity: request.identity, token: presentedAccessToken(request) });
      if (!subject) throw new AppError('INVALID_TOKEN');
      reply.header('x-user-id', String(subject.userId));
      reply.header('x-user-email', subject.email);
      return subject;
    },
  );
}

async function signedInBody(session: SignedIn, profiles: ProfileService) {
  return {
    accessToken: session.accessToken,
    refreshToken: session.refreshToken,
    expiresIn: session.expiresIn,
    user: await profiles.view(session.user),
  };
}

/** How every sign-in answers: 202 with a temp_token when the account has 2FA, else 200 with tokens and the session cookies. */
export async function sendLoginOutcome(
  reply: FastifyReply,
  outcome: LoginOutcome,
  { cookies, profiles }: { cookies: CookiePolicy; profiles: ProfileService },
): Promise<FastifyReply> {
  if (outcome.kind === 'two-factor') {
    return reply.code(202).send({
      require_2fa: true,
      temp_token: outcome.tempToken,
      type: outcome.type,
      message: outcome.type === 'email' ? 'Enter the code we e-mailed you, or a backup code' : 'Enter the code from your authenticator app, or a backup code',
    });
  }
  setSessionCookies(reply, cookies, outcome.session);
  return reply.code(200).send(await signedInBody(outcome.session, profiles));
}
