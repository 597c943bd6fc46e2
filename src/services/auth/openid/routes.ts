import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { randomToken } from '../../../platform/crypto.ts';
import type { HttpApp } from '../../../platform/http/app.ts';
import { errorResponses } from '../../../platform/http/schemas.ts';
import type { ProfileService } from '../account/service.ts';
import { clientInfo, setSessionCookies } from '../cookies.ts';
import type { CookiePolicy } from '../cookies.ts';
import { sendLoginOutcome } from '../login/routes.ts';
import { Login2FARequiredResponse, LoginResponse, strictBody } from '../schemas.ts';
import { FAILURE_REASONS } from './failures.ts';
import { PROVIDER_NAMES } from './providers/provider.ts';
import { CALLBACK_PATH } from './providers/registry.ts';
import type { OpenIdService } from './service.ts';
import { STATE_TTL_MS } from './states.ts';

export interface OpenIdRouteDeps {
  openId: OpenIdService;
  profiles: ProfileService;
  cookies: CookiePolicy;
}

/** Ties a sign-in to the browser that started it: the callback is refused without it. */
export const BINDING_COOKIE = 'openid_binding';
const BINDING_PATH = '/api/auth/openid';
const BINDING_VALUE = /^[\w-]{43}$/;
/** Apple's form_post carries code, state and the `user` JSON: a few kilobytes at most. */
const FORM_BODY_LIMIT = 16_384;

const TAGS = ['auth'];
const REASONS = FAILURE_REASONS.join(', ');
const RedirectResponse = Type.Null({ description: 'Redirect; the target is in the Location header' });
const CallbackField = Type.Optional(Type.String({ maxLength: 2048 }));
/** Providers add parameters of their own (Google's scope and authuser, …): unknown ones are ignored, not refused. */
const CallbackParameters = {
  code: CallbackField,
  state: CallbackField,
  iss: CallbackField,
  error: CallbackField,
  error_description: CallbackField,
};
const CALLBACK_DESCRIPTION = `Every outcome is a 303 redirect. ret=web: {WEB_URL}?openid=success&access_token=… (and the access_token and refresh_token cookies), {WEB_URL}/login/2fa?token=<temp_token>&type=totp|email, {WEB_URL}/login?error=<reason>. ret=app: {APP_SCHEME}://oauthredirect?openid=success&access_token=…, …?openid=2fa&token=…&type=totp|email, …?openid=error&error=<reason>. Reasons: ${REASONS}. See docs/social-login.md.`;

export async function registerOpenIdRoutes(app: HttpApp, deps: OpenIdRouteDeps): Promise<void> {
  const { openId, profiles, cookies } = deps;

  app.get(
    '/api/auth/openid/auth',
    {
      schema: {
        tags: TAGS,
        summary: 'Start a social sign-in: 307 to the provider',
        description:
          'Redirects to Google, Facebook or Apple with state, nonce and PKCE (S256), and sets the openid_binding cookie the callback requires. ret=app makes the callback answer with the app-scheme redirects. 400 OPENID_PROVIDER_NOT_CONFIGURED for a provider this server has no client for; 429 RATE_LIMITED. A provider that cannot be reached ends at the error redirect with reason provider_unavailable.',
        querystring: Type.Object({
          provider: Type.Union(PROVIDER_NAMES.map((name) => Type.Literal(name))),
          ret: Type.Optional(Type.Union([Type.Literal('web'), Type.Literal('app')], { default: 'web' })),
        }),
        response: { 303: RedirectResponse, 307: RedirectResponse },
      },
    },
    async (request, reply) => {
      const presented = request.cookies[BINDING_COOKIE];
      // Reusing the browser's binding lets two sign-ins run in two tabs at once.
      const binding = presented && BINDING_VALUE.test(presented) ? presented : randomToken(32);
      const redirect = await openId.start(request.query.provider, request.query.ret ?? 'web', binding, request.ip);
      setBindingCookie(reply, cookies, binding);
      reply.header('cache-control', 'no-store');
      return reply.redirect(redirect.location, redirect.status);
    },
  );

  const finish = async (request: FastifyRequest, reply: FastifyReply, fields: Record<string, unknown>) => {
    const parameters = new URLSearchParams();
    for (const [name, value] of Object.entries(fields)) if (typeof value === 'string') parameters.set(name, value);
    const outcome = await openId.finish(parameters, request.cookies[BINDING_COOKIE], clientInfo(request));
    if (outcome.session) setSessionCookies(reply, cookies, outcome.session);
    reply.header('cache-control', 'no-store');
    return reply.redirect(outcome.location, 303);
  };

  app.get(
    CALLBACK_PATH,
    {
      schema: {
        tags: TAGS,
        summary: "The provider's redirect back (Google, Facebook)",
        description: CALLBACK_DESCRIPTION,
        querystring: Type.Object(CallbackParameters),
        response: { 303: RedirectResponse },
      },
    },
    (request, reply) => finish(request, reply, request.query),
  );

  // Apple answers with form_post: only this route parses application/x-www-form-urlencoded.
  await app.register(async (scope) => {
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body.toString())));
    });
    scope.withTypeProvider<TypeBoxTypeProvider>().post(
      CALLBACK_PATH,
      {
        schema: {
          tags: TAGS,
          summary: "The provider's form_post back (Apple)",
          description: `${CALLBACK_DESCRIPTION} Apple adds \`user\` (JSON with the name) on the first authorization.`,
          consumes: ['application/x-www-form-urlencoded'],
          body: Type.Object({ ...CallbackParameters, user: CallbackField }),
          response: { 303: RedirectResponse },
        },
      },
      (request, reply) => finish(request, reply, request.body),
    );
  });

  app.post(
    '/api/auth/openid/token',
    {
      schema: {
        tags: TAGS,
        summary: 'Mobile sign-in: exchange a Google id_token',
        description:
          'The app signs in with Google itself and posts the id_token. Checked: signature (the issuer\'s JWKS), iss, aud (one of OIDC_GOOGLE_AUDIENCES), exp, and a verified e-mail. 200 as /login (tokens and cookies; the spec\'s OpenIDTokenResponse fields accessToken and user, plus refreshToken and expiresIn), or 202 when the account has two-factor authentication. 400 OPENID_PROVIDER_UNSUPPORTED (provider other than google), OPENID_PROVIDER_NOT_CONFIGURED; 401 ID_TOKEN_INVALID, ID_TOKEN_EXPIRED, ID_TOKEN_WRONG_ISSUER, ID_TOKEN_WRONG_AUDIENCE, ID_TOKEN_EMAIL_UNVERIFIED; 403 ACCOUNT_DISABLED, ACCOUNT_EXPIRED, REGISTRATION_DISABLED; 409 OPENID_ACCOUNT_EXISTS; 429; 502 UPSTREAM_UNAVAILABLE when Google\'s keys cannot be fetched.',
        body: Type.Object({ provider: Type.String({ minLength: 1, maxLength: 32 }), id_token: Type.String({ minLength: 1, maxLength: 8192 }) }, strictBody),
        response: { 200: LoginResponse, 202: Login2FARequiredResponse, ...errorResponses(400, 401, 403, 409, 429, 502) },
      },
    },
    async (request, reply) => {
      const outcome = await openId.exchangeIdToken(request.body.provider, request.body.id_token, clientInfo(request));
      return sendLoginOutcome(reply, outcome, { cookies, profiles });
    },
  );
}

/**
 * HttpOnly, only for /api/auth/openid, as long as a state lives. Apple's form_post is a cross-site POST,
 * which carries only SameSite=None cookies, and browsers take those only with Secure: so None with an
 * https PUBLIC_URL, Lax over plain http (local development, where Apple cannot call back anyway).
 */
function setBindingCookie(reply: FastifyReply, policy: CookiePolicy, value: string): void {
  reply.setCookie(BINDING_COOKIE, value, {
    httpOnly: true,
    secure: policy.secure,
    sameSite: policy.secure ? 'none' : 'lax',
    path: BINDING_PATH,
    maxAge: STATE_TTL_MS / 1000,
  });
}
