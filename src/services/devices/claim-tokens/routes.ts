import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import {
  ClaimTokenCreateRequest,
  ClaimTokenListQuery,
  ClaimTokenParams,
  ClaimTokenSchema,
  ClaimTokenUpdateRequest,
} from '../schemas.ts';
import type { ClaimTokenService } from './service.ts';
import { errorResponses } from '../../../platform/http/schemas.ts';

const TAGS = ['devices'];

/** Provisioning of claim tokens: administrators only (route-access.ts). */
export function registerClaimTokenRoutes(app: HttpApp, deps: { claimTokens: ClaimTokenService }): void {
  const { claimTokens } = deps;

  app.post(
    '/api/devices/claim-tokens',
    {
      schema: {
        tags: TAGS,
        summary: 'Provision a claim token (without uniqueId it is "not configured" until PUT)',
        description: '409 CLAIM_TOKEN_EXISTS when a live token already names the uniqueId; 409 DEVICE_ALREADY_OWNED when a device has the uniqueId, unless transfer is true (its claim then takes the device from its owner); 403 FORBIDDEN for non-administrators.',
        body: ClaimTokenCreateRequest,
        response: { 201: ClaimTokenSchema, ...errorResponses(400, 401, 403, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await claimTokens.create(request.body)),
  );

  app.get(
    '/api/devices/claim-tokens',
    {
      schema: {
        tags: TAGS,
        summary: 'Claim tokens, oldest first, optionally by status or uniqueId',
        description: '403 FORBIDDEN for non-administrators.',
        querystring: ClaimTokenListQuery,
        response: { 200: Type.Array(ClaimTokenSchema), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const { status, uniqueId, limit, offset } = request.query;
      return claimTokens.list({ status, uniqueId, limit: limit ?? 100, offset: offset ?? 0 });
    },
  );

  app.get(
    '/api/devices/claim-tokens/:token',
    {
      schema: {
        tags: TAGS,
        summary: 'One claim token (case, dashes and spaces ignored)',
        description: '404 CLAIM_TOKEN_NOT_FOUND; 403 FORBIDDEN for non-administrators.',
        params: ClaimTokenParams,
        response: { 200: ClaimTokenSchema, ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => claimTokens.get(request.params.token),
  );

  app.put(
    '/api/devices/claim-tokens/:token',
    {
      schema: {
        tags: TAGS,
        summary: 'Configure an unclaimed token: its uniqueId, modelCode or modelName',
        description: '404 CLAIM_TOKEN_NOT_FOUND; 409 CLAIM_TOKEN_ALREADY_CLAIMED, CLAIM_TOKEN_REVOKED or CLAIM_TOKEN_EXISTS; 409 DEVICE_ALREADY_OWNED for a new uniqueId a device has, unless transfer is true; 403 FORBIDDEN for non-administrators.',
        params: ClaimTokenParams,
        body: ClaimTokenUpdateRequest,
        response: { 200: ClaimTokenSchema, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => claimTokens.configure(request.params.token, request.body),
  );

  app.delete(
    '/api/devices/claim-tokens/:token',
    {
      schema: {
        tags: TAGS,
        summary: 'Revoke a claim token for good (a claimed device stays with its owner)',
        description: 'Revoking again changes nothing. 404 CLAIM_TOKEN_NOT_FOUND; 403 FORBIDDEN for non-administrators.',
        params: ClaimTokenParams,
        response: { 204: Type.Null(), ...errorResponses(401, 403, 404) },
      },
    },
    async (request, reply) => {
      await claimTokens.revoke(request.params.token);
      return reply.code(204).send(null);
    },
  );
}
