import { Type } from 'typebox';
import type { TSchema } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { requireIdentity } from '../../../platform/http/identity.ts';
import { clearSessionCookies } from '../cookies.ts';
import type { CookiePolicy } from '../cookies.ts';
import { MessageResponse, NoContent, PasswordField, strictBody, User } from '../schemas.ts';
import type { ProfileService } from './service.ts';

const TAGS = ['auth'];
const Nullable = <T extends TSchema>(field: T) => Type.Optional(Type.Union([field, Type.Null()]));

export function registerAccountRoutes(app: HttpApp, profiles: ProfileService, cookies: CookiePolicy): void {
  app.get(
    '/api/auth/profile',
    { schema: { tags: TAGS, summary: 'The signed-in user', response: { 200: User } } },
    async (request) => profiles.get(requireIdentity(request).userId),
  );

  app.put(
    '/api/auth/profile',
    {
      schema: {
        tags: TAGS,
        summary: 'Update name, phone, time zone, language or units',
        description:
          'Absent fields stay, null clears. timezone (IANA), language (BCP 47), speedUnit (kmh, mph, kn) and distanceUnit (km, mi) are kept in attributes. 403 ACCOUNT_READONLY for read-only accounts.',
        body: Type.Object(
          {
            name: Nullable(Type.String({ maxLength: 255 })),
            phone: Nullable(Type.String({ maxLength: 64, pattern: '^[0-9+()./ -]*$' })),
            timezone: Nullable(Type.String({ minLength: 1, maxLength: 64 })),
            language: Nullable(Type.String({ minLength: 2, maxLength: 35 })),
            speedUnit: Nullable(Type.Union([Type.Literal('kmh'), Type.Literal('mph'), Type.Literal('kn')])),
            distanceUnit: Nullable(Type.Union([Type.Literal('km'), Type.Literal('mi')])),
          },
          strictBody,
        ),
        response: { 200: User },
      },
    },
    async (request) => profiles.update(requireIdentity(request).userId, request.body),
  );

  app.post(
    '/api/auth/change-password',
    {
      schema: {
        tags: TAGS,
        summary: 'Change the password; the other sessions are signed out',
        description: '400 INVALID_CURRENT_PASSWORD or WEAK_PASSWORD; 429 RATE_LIMITED.',
        body: Type.Object({ currentPassword: PasswordField, newPassword: PasswordField }, strictBody),
        response: { 200: MessageResponse },
      },
    },
    async (request) => profiles.changePassword(requireIdentity(request), request.body.currentPassword, request.body.newPassword),
  );

  app.delete(
    '/api/auth/account',
    {
      schema: {
        tags: TAGS,
        summary: "Delete the account: every session ends, and the user's devices, positions and geofences go with it",
        description: '409 LAST_ADMINISTRATOR when the caller is the only administrator who can still sign in.',
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      await profiles.deleteAccount(requireIdentity(request).userId);
      clearSessionCookies(reply, cookies);
      return reply.code(204).send(null);
    },
  );
}
