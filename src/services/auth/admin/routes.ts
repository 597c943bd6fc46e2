import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { requireIdentity } from '../../../platform/http/identity.ts';
import { DecimalInteger, IdParam } from '../../../platform/http/schemas.ts';
import { strictBody, User } from '../schemas.ts';
import type { UserAdminService } from './service.ts';

const TAGS = ['users'];
const UserId = Type.Object({ id: IdParam });

export function registerAdminRoutes(app: HttpApp, admin: UserAdminService): void {
  app.get(
    '/api/auth/users',
    {
      schema: {
        tags: TAGS,
        summary: 'Accounts, by id, a page at a time (administrators)',
        description: '403 FORBIDDEN for non-administrators.',
        querystring: Type.Object(
          {
            search: Type.Optional(Type.String({ maxLength: 254, description: 'Part of the e-mail address' })),
            page: DecimalInteger({ minimum: 1, maximum: 1_000_000 }, { default: 1 }),
            limit: DecimalInteger({ minimum: 1, maximum: 100 }, { default: 50 }),
          },
        ),
        response: { 200: Type.Object({ users: Type.Array(User), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }) },
      },
    },
    async (request) => admin.list(request.query),
  );

  app.get(
    '/api/auth/users/:id',
    {
      schema: { tags: TAGS, summary: 'One account (administrators)', description: '403 FORBIDDEN; 404 USER_NOT_FOUND.', params: UserId, response: { 200: User } },
    },
    async (request) => admin.get(request.params.id),
  );

  app.put(
    '/api/auth/users/:id',
    {
      schema: {
        tags: TAGS,
        summary: "Change an account's access flags (administrators)",
        description:
          'Absent fields stay. Disabling, or an expirationTime already past, signs the user out everywhere at once. 400 CANNOT_CHANGE_OWN_ACCESS when an administrator would disable, expire or demote themselves; 403 FORBIDDEN; 404 USER_NOT_FOUND.',
        params: UserId,
        body: Type.Object(
          {
            administrator: Type.Optional(Type.Boolean()),
            disabled: Type.Optional(Type.Boolean()),
            readonly: Type.Optional(Type.Boolean()),
            deviceReadonly: Type.Optional(Type.Boolean()),
            limitCommands: Type.Optional(Type.Boolean()),
            expirationTime: Type.Optional(Type.Union([Type.String({ format: 'date-time', maxLength: 64 }), Type.Null()])),
          },
          strictBody,
        ),
        response: { 200: User },
      },
    },
    async (request) => admin.update(requireIdentity(request).userId, request.params.id, request.body),
  );
}
