import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { requireIdentity } from '../../../platform/http/identity.ts';
import type { ProfileService } from '../account/service.ts';
import { strictBody, User } from '../schemas.ts';
import type { LegalDocuments, LegalType } from './documents.ts';
import type { LegalService } from './service.ts';

const TAGS = ['legal'];
const LegalDocument = Type.Object({ type: Type.Union([Type.Literal('terms'), Type.Literal('privacy')]), version: Type.String(), content: Type.String({ description: 'Markdown' }) });

export function registerLegalRoutes(app: HttpApp, documents: LegalDocuments, legal: LegalService, profiles: ProfileService): void {
  for (const type of ['terms', 'privacy'] as const satisfies LegalType[]) {
    app.get(
      `/api/legal/${type}`,
      {
        schema: {
          tags: TAGS,
          summary: type === 'terms' ? 'The current terms of service' : 'The current privacy policy',
          response: { 200: LegalDocument },
        },
      },
      async (_request, reply) => {
        reply.header('cache-control', 'public, max-age=300');
        return documents.get(type);
      },
    );
  }

  app.post(
    '/api/legal/accept',
    {
      schema: {
        tags: TAGS,
        summary: 'Accept the current terms (and the privacy policy current with them)',
        description:
          'Records attributes.termsAcceptedVersion, privacyAcceptedVersion and termsAcceptedAt. A client asks the user when termsAcceptedVersion differs from GET /api/legal/terms (e.g. after a first social sign-in). 400 TERMS_VERSION_OUTDATED.',
        body: Type.Object({ version: Type.String({ minLength: 1, maxLength: 64 }) }, strictBody),
        response: { 200: User },
      },
    },
    async (request) => profiles.view(await legal.accept(requireIdentity(request).userId, request.body.version)),
  );
}
