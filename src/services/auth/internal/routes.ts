import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { AppError } from '../errors.ts';
import { IdParam } from '../../../platform/http/schemas.ts';
import type { UserAccess, UserDirectory } from '../users/directory.ts';

const TAGS = ['internal'];

/** The wire form of UserAccess, which RemoteUserDirectory reads. */
export const UserAccessSchema = Type.Object({
  id: Type.Integer(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  administrator: Type.Boolean(),
  disabled: Type.Boolean(),
  readonly: Type.Boolean(),
  deviceReadonly: Type.Boolean(),
  limitCommands: Type.Boolean(),
  expirationTime: Type.Union([Type.Integer({ description: 'Epoch milliseconds' }), Type.Null()]),
  language: Type.Union([Type.String(), Type.Null()]),
  timezone: Type.Union([Type.String(), Type.Null()]),
});

/** Service-to-service lookups (X-Internal-Token, no user); the gateway never routes /internal paths. */
export function registerInternalUserRoutes(app: HttpApp, directory: UserDirectory): void {
  const found = (user: UserAccess | undefined): UserAccess => {
    if (!user) throw new AppError('USER_NOT_FOUND');
    return user;
  };

  app.get(
    '/api/auth/internal/users/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'A user and their access flags (services only, X-Internal-Token)',
        params: Type.Object({ id: IdParam }),
        response: { 200: UserAccessSchema },
      },
    },
    async (request) => found(await directory.get(request.params.id)),
  );

  app.get(
    '/api/auth/internal/users',
    {
      schema: {
        tags: TAGS,
        summary: 'The user with this e-mail address (services only, X-Internal-Token)',
        querystring: Type.Object({ email: Type.String({ minLength: 1, maxLength: 254 }) }),
        response: { 200: UserAccessSchema },
      },
    },
    async (request) => found(await directory.findByEmail(request.query.email)),
  );
}
