import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { HttpApp } from '../../platform/http/app.ts';
import { AppError } from './errors.ts';
import { requireIdentity } from '../../platform/http/identity.ts';
import type { RateLimiter, RateRule } from '../../platform/rate-limit.ts';
import type { ClaimTokenService } from './claim-tokens/service.ts';
import {
  DeviceClaimRequest,
  DeviceClaimResponse,
  DeviceCreateRequest,
  DeviceListQuery,
  DeviceParams,
  DeviceSchema,
  DeviceUpdateRequest,
  ShareCreateRequest,
  ShareParams,
  ShareSchema,
  ShareUpdateRequest,
  ShareWithdrawQuery,
  TokenValidateRequest,
  TokenValidateResponse,
} from './schemas.ts';
import type { DeviceService } from './service.ts';
import type { SharingService } from './sharing.ts';
import { errorResponses } from '../../platform/http/schemas.ts';

export interface DeviceRouteDeps {
  devices: DeviceService;
  sharing: SharingService;
  claimTokens: ClaimTokenService;
  rateLimiter: RateLimiter;
}

/** DESIGN §5.2: the public preview is the one unauthenticated way to probe tokens. */
export const VALIDATE_TOKEN_RULE: RateRule = { name: 'device-validate-token', limit: 30, windowSeconds: 60 };

const TAGS = ['devices'];

/** A request without any body means "no token": the answer names the missing token rather than the body. */
async function emptyBodyAsObject(request: FastifyRequest): Promise<void> {
  request.body ??= {};
}

export function registerDeviceRoutes(app: HttpApp, deps: DeviceRouteDeps): void {
  const { devices, sharing, claimTokens, rateLimiter } = deps;

  app.get(
    '/api/devices',
    {
      schema: {
        tags: TAGS,
        summary: 'Devices the caller owns or was shared (administrators: of any user with userId)',
        description: 'Filters id and uniqueId repeat. 403 FORBIDDEN for userId of another user unless administrator.',
        querystring: DeviceListQuery,
        response: { 200: Type.Array(DeviceSchema), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const { userId, id, uniqueId } = request.query;
      return devices.list(requireIdentity(request).userId, { userId, ids: id, uniqueIds: uniqueId });
    },
  );

  app.post(
    '/api/devices',
    {
      schema: {
        tags: TAGS,
        summary: 'Create a device (with deviceToken: claimed with that token)',
        description: '409 DEVICE_EXISTS; 400 CLAIM_TOKEN_REQUIRED when the uniqueId has a claim token and none was sent (administrators exempt); with deviceToken: 404 CLAIM_TOKEN_NOT_FOUND, 400 DEVICE_NOT_CONFIGURED, 400 CLAIM_TOKEN_MISMATCH, 409 CLAIM_TOKEN_ALREADY_CLAIMED; 403 DEVICE_REGISTRATION_CLAIM_ONLY without deviceToken when DEVICE_REGISTRATION=claim-only (administrators exempt); 409 LIMIT_REACHED past MAX_DEVICES_PER_USER; 403 FORBIDDEN for read-only accounts.',
        body: DeviceCreateRequest,
        response: { 201: DeviceSchema, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      const device = await devices.create(requireIdentity(request).userId, request.body);
      return reply.code(201).send(device);
    },
  );

  app.post(
    '/api/devices/validate-token',
    {
      schema: {
        tags: TAGS,
        summary: 'Preview a claim token (public; 30 requests a minute per IP)',
        description: 'Always 200 with success or errorCode TOKEN_REQUIRED, TOKEN_INVALID (unknown, revoked or not configured) or TOKEN_ALREADY_CLAIMED. A token the bearer claimed validates as success. 429 RATE_LIMITED.',
        body: TokenValidateRequest,
        response: { 200: TokenValidateResponse, ...errorResponses(400, 429) },
      },
      preValidation: emptyBodyAsObject,
    },
    async (request) => {
      const decision = await rateLimiter.hit(VALIDATE_TOKEN_RULE, request.ip);
      if (!decision.allowed) {
        throw new AppError('RATE_LIMITED', undefined, { headers: { 'retry-after': String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000))) } });
      }
      return claimTokens.validate(request.body?.token, request.identity?.userId);
    },
  );

  app.post(
    '/api/devices/claim',
    {
      schema: {
        tags: TAGS,
        summary: 'Claim a device with its claim token',
        description: '400 CLAIM_TOKEN_REQUIRED; 404 CLAIM_TOKEN_NOT_FOUND (unknown or revoked); 400 DEVICE_NOT_CONFIGURED; 409 CLAIM_TOKEN_ALREADY_CLAIMED; 200 alreadyClaimed: true for the same user; 409 LIMIT_REACHED past MAX_DEVICES_PER_USER; 403 FORBIDDEN for read-only accounts.',
        body: DeviceClaimRequest,
        response: { 200: DeviceClaimResponse, ...errorResponses(400, 401, 403, 404, 409) },
      },
      preValidation: emptyBodyAsObject,
    },
    async (request) => devices.claim(requireIdentity(request).userId, request.body?.token),
  );

  app.get(
    '/api/devices/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'One device',
        description: '404 NOT_FOUND; 403 FORBIDDEN when neither owned, shared nor administrator.',
        params: DeviceParams,
        response: { 200: DeviceSchema, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => devices.get(requireIdentity(request).userId, request.params.id),
  );

  app.put(
    '/api/devices/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Change a device (owner or administrator)',
        description: 'Fields left out keep their value; null clears an optional one. 404 NOT_FOUND; 403 FORBIDDEN.',
        params: DeviceParams,
        body: DeviceUpdateRequest,
        response: { 200: DeviceSchema, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => devices.update(requireIdentity(request).userId, request.params.id, request.body),
  );

  app.delete(
    '/api/devices/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Delete a device with its positions and events, releasing its claim token (owner or administrator)',
        description: '404 NOT_FOUND; 403 FORBIDDEN.',
        params: DeviceParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      await devices.delete(requireIdentity(request).userId, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/devices/:id/shares',
    {
      schema: {
        tags: TAGS,
        summary: 'Share a device with a user by e-mail (owner or administrator)',
        description:
          'Permissions left out are false. The answer is the same whether or not an account has the address (userId and name null): a share to an address without an account stays pending until an account with it lists its devices. 404 NOT_FOUND (device); 400 CANNOT_SHARE_WITH_OWNER; 409 SHARE_EXISTS; 409 LIMIT_REACHED past MAX_SHARES_PER_DEVICE; 403 FORBIDDEN.',
        params: DeviceParams,
        body: ShareCreateRequest,
        response: { 201: ShareSchema, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      const share = await sharing.share(requireIdentity(request).userId, request.params.id, request.body);
      return reply.code(201).send(share);
    },
  );

  app.get(
    '/api/devices/:id/shares',
    {
      schema: {
        tags: TAGS,
        summary: 'Users a device is shared with, then pending shares (userId null) (owner or administrator)',
        description: '404 NOT_FOUND; 403 FORBIDDEN.',
        params: DeviceParams,
        response: { 200: Type.Array(ShareSchema), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => sharing.list(requireIdentity(request).userId, request.params.id),
  );

  app.delete(
    '/api/devices/:id/shares',
    {
      schema: {
        tags: TAGS,
        summary: 'Withdraw a pending share by its address (owner or administrator)',
        description: '404 NOT_FOUND (device, or no pending share with this address: an active share ends by DELETE /{id}/shares/{userId}); 403 FORBIDDEN.',
        params: DeviceParams,
        querystring: ShareWithdrawQuery,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      await sharing.withdraw(requireIdentity(request).userId, request.params.id, request.query.email);
      return reply.code(204).send(null);
    },
  );

  app.put(
    '/api/devices/:id/shares/:userId',
    {
      schema: {
        tags: TAGS,
        summary: "Change a share's permissions; permissions left out keep their value (owner or administrator)",
        description: '404 NOT_FOUND (device or share); 403 FORBIDDEN.',
        params: ShareParams,
        body: ShareUpdateRequest,
        response: { 200: ShareSchema, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => sharing.update(requireIdentity(request).userId, request.params.id, request.params.userId, request.body.permissions),
  );

  app.delete(
    '/api/devices/:id/shares/:userId',
    {
      schema: {
        tags: TAGS,
        summary: 'End a share (owner or administrator; the shared user may leave their own)',
        description: '404 NOT_FOUND (device or share); 403 FORBIDDEN.',
        params: ShareParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      await sharing.remove(requireIdentity(request).userId, request.params.id, request.params.userId);
      return reply.code(204).send(null);
    },
  );
}
