import type { Insertable, Updateable } from 'kysely';
import type { EventBus } from '../../../platform/bus.ts';
import { AppError } from '../errors.ts';
import type { ErrorDetail } from '../../../platform/http/errors.ts';
import { announceAccessChange } from '../caches.ts';
import type { DevicesStore } from '../store.ts';
import { isUniqueViolation } from '../store.ts';
import type { ClaimTokensTable } from '../tables.ts';
import { isoOrNull } from '../../../platform/http/schemas.ts';
import { formatClaimToken, generateClaimToken, normaliseClaimToken } from './code.ts';
import type { ClaimTokenFilters, ClaimTokenRow, ClaimTokenStatus } from './repository.ts';

export interface ClaimTokenView {
  /** Grouped XXXX-XXXX-XXXX, as printed. */
  token: string;
  /** Null while the token is not configured for a device. */
  uniqueId: string | null;
  modelCode: string;
  /** Display name: modelName, else modelCode. */
  model: string;
  status: ClaimTokenStatus;
  claimedBy: number | null;
  claimedAt: string | null;
  createdAt: string;
}

export interface NewClaimToken {
  uniqueId?: string | null;
  modelCode: string;
  modelName?: string | null;
}

export interface ClaimTokenChanges {
  uniqueId?: string | null;
  modelCode?: string;
  modelName?: string | null;
}

/**
 * A token for a uniqueId that a device has already hands that device to whoever claims the token,
 * ending its shares: provisioning one must say so.
 */
export interface Transfer {
  transfer?: boolean;
}

export type TokenValidation =
  | { success: true; uniqueId: string; model: string; modelCode: string }
  | { success: false; errorCode: 'TOKEN_REQUIRED' | 'TOKEN_INVALID' | 'TOKEN_ALREADY_CLAIMED'; errorMessage: string };

/** Rows inserted per statement in a bulk import (well under both engines' bound-parameter limits). */
const INSERT_CHUNK = 500;
/** A fresh 60-bit token colliding with a stored one is rare; this many in a row means something is broken. */
const GENERATE_ATTEMPTS = 5;

export function toClaimTokenView(row: ClaimTokenRow): ClaimTokenView {
  return {
    token: formatClaimToken(row.token),
    uniqueId: row.unique_id,
    modelCode: row.model_code,
    model: row.model_name ?? row.model_code,
    status: row.status as ClaimTokenStatus,
    claimedBy: row.claimed_by,
    claimedAt: isoOrNull(row.claimed_at),
    createdAt: isoOrNull(row.created_at) as string,
  };
}

/**
 * Provisioning claim tokens (administrators, CLI) and the public preview of one. Of all its
 * writes only revoking a claimed token changes what a user sees (the token on their device):
 * new and configured tokens are unclaimed, and only claimed ones show.
 */
export class ClaimTokenService {
  private readonly store: DevicesStore;
  private readonly bus: EventBus;

  constructor(store: DevicesStore, bus: EventBus) {
    this.store = store;
    this.bus = bus;
  }

  async create(input: NewClaimToken & Transfer): Promise<ClaimTokenView> {
    const uniqueId = input.uniqueId ?? null;
    if (uniqueId !== null && (await this.store.tokens.findLiveByUniqueId(uniqueId))) throw new AppError('CLAIM_TOKEN_EXISTS');
    if (uniqueId !== null && !input.transfer) await this.assertNotRegistered(uniqueId);
    for (let attempt = 0; attempt < GENERATE_ATTEMPTS; attempt++) {
      try {
        return toClaimTokenView(await this.store.tokens.insert(newRow(generateClaimToken(), input, Date.now())));
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        // Either another token took this uniqueId meanwhile, or the generated token exists: try a new one.
        if (uniqueId !== null && (await this.store.tokens.findLiveByUniqueId(uniqueId))) throw new AppError('CLAIM_TOKEN_EXISTS');
      }
    }
    throw new Error('could not generate an unused claim token');
  }

  /**
   * All or nothing: every row is checked first (duplicate uniqueIds in the batch or among live
   * tokens are reported with their position), then the tokens are inserted in one transaction.
   */
  async createMany(inputs: readonly NewClaimToken[], options: Transfer = {}): Promise<ClaimTokenView[]> {
    const details: ErrorDetail[] = [];
    const seen = new Map<string, number>();
    inputs.forEach((input, index) => {
      if (input.uniqueId === undefined || input.uniqueId === null) return;
      const first = seen.get(input.uniqueId);
      if (first !== undefined) details.push({ path: `/${index}/uniqueId`, message: `repeats the uniqueId of /${first}` });
      else seen.set(input.uniqueId, index);
    });
    const taken = new Set(await this.store.tokens.liveUniqueIds([...seen.keys()]));
    const registered = new Set(options.transfer ? [] : await this.store.devices.existingUniqueIds([...seen.keys()]));
    for (const [uniqueId, index] of seen) {
      if (taken.has(uniqueId)) details.push({ path: `/${index}/uniqueId`, message: 'already has a live claim token' });
      else if (registered.has(uniqueId)) details.push({ path: `/${index}/uniqueId`, message: 'is registered to a device already (a transfer must be asked for)' });
    }
    if (details.length > 0) {
      details.sort((a, b) => a.path.localeCompare(b.path, 'en', { numeric: true }));
      const code = taken.size > 0 ? 'CLAIM_TOKEN_EXISTS' : 'DEVICE_ALREADY_OWNED';
      throw new AppError(code, `${details.length} row(s) name a uniqueId that already has a claim token or a device`, { details });
    }
    const tokens = await this.unusedTokens(inputs.length);
    const now = Date.now();
    const rows = inputs.map((input, index) => newRow(tokens[index] as string, input, now));
    const inserted = await this.store.transaction(async (repositories) => {
      const all: ClaimTokenRow[] = [];
      for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
        all.push(...(await repositories.tokens.insertMany(rows.slice(start, start + INSERT_CHUNK))));
      }
      return all;
    });
    const byToken = new Map(inserted.map((row) => [row.token, row]));
    return rows.map((row) => toClaimTokenView(byToken.get(row.token) as ClaimTokenRow));
  }

  /** `count` distinct fresh tokens that no stored token uses. */
  private async unusedTokens(count: number): Promise<string[]> {
    const tokens = new Set<string>();
    for (let attempt = 0; tokens.size < count; attempt++) {
      if (attempt >= GENERATE_ATTEMPTS) throw new Error('could not generate unused claim tokens');
      const fresh: string[] = [];
      while (tokens.size + fresh.length < count) {
        const token = generateClaimToken();
        if (!tokens.has(token) && !fresh.includes(token)) fresh.push(token);
      }
      const used = new Set<string>();
      for (let start = 0; start < fresh.length; start += INSERT_CHUNK) {
        for (const token of await this.store.tokens.existingTokens(fresh.slice(start, start + INSERT_CHUNK))) used.add(token);
      }
      for (const token of fresh) if (!used.has(token)) tokens.add(token);
    }
    return [...tokens];
  }

  async list(filters: ClaimTokenFilters): Promise<ClaimTokenView[]> {
    return (await this.store.tokens.list(filters)).map(toClaimTokenView);
  }

  async get(rawToken: string): Promise<ClaimTokenView> {
    return toClaimTokenView(await this.requireToken(rawToken));
  }

  /** Configures a token printed before its device was assigned, or corrects one: only while unclaimed. */
  async configure(rawToken: string, changes: ClaimTokenChanges & Transfer): Promise<ClaimTokenView> {
    const current = await this.requireToken(rawToken);
    const update: Updateable<ClaimTokensTable> = { updated_at: Date.now() };
    if (changes.uniqueId !== undefined) update.unique_id = changes.uniqueId;
    if (changes.modelCode !== undefined) update.model_code = changes.modelCode;
    if (changes.modelName !== undefined) update.model_name = changes.modelName;
    if (changes.uniqueId !== undefined && changes.uniqueId !== null && changes.uniqueId !== current.unique_id) {
      if (await this.store.tokens.findLiveByUniqueId(changes.uniqueId)) throw new AppError('CLAIM_TOKEN_EXISTS');
      if (!changes.transfer) await this.assertNotRegistered(changes.uniqueId);
    }
    let row: ClaimTokenRow | undefined;
    try {
      row = await this.store.tokens.updateUnclaimed(current.token, update);
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppError('CLAIM_TOKEN_EXISTS');
      throw error;
    }
    if (row) return toClaimTokenView(row);
    const now = await this.requireToken(current.token);
    if (now.status === 'revoked') throw new AppError('CLAIM_TOKEN_REVOKED', 'A revoked claim token cannot be changed');
    throw new AppError('CLAIM_TOKEN_ALREADY_CLAIMED', 'A claimed token cannot be changed');
  }

  /** Revokes a token for good (lost or leaked); revoking again changes nothing. A claimed device stays with its owner. */
  async revoke(rawToken: string): Promise<void> {
    const row = await this.requireToken(rawToken);
    const deviceId = await this.store.tokens.revoke(row.token, Date.now());
    if (deviceId !== null) await announceAccessChange(this.bus, { deviceIds: [deviceId] });
  }

  /** The public preview before a claim; a token the caller already claimed validates as success. */
  async validate(rawToken: string | undefined, callerId: number | undefined): Promise<TokenValidation> {
    if (rawToken === undefined || rawToken.trim() === '') {
      return { success: false, errorCode: 'TOKEN_REQUIRED', errorMessage: 'A claim token is required' };
    }
    const token = normaliseClaimToken(rawToken);
    const row = token ? await this.store.tokens.find(token) : undefined;
    if (!row || row.status === 'revoked') {
      return { success: false, errorCode: 'TOKEN_INVALID', errorMessage: 'The claim token is not valid' };
    }
    if (row.status === 'claimed' && row.claimed_by !== callerId) {
      return { success: false, errorCode: 'TOKEN_ALREADY_CLAIMED', errorMessage: 'The device was already claimed by another user' };
    }
    if (row.unique_id === null) {
      return { success: false, errorCode: 'TOKEN_INVALID', errorMessage: 'The claim token is not configured for a device yet' };
    }
    return { success: true, uniqueId: row.unique_id, model: row.model_name ?? row.model_code, modelCode: row.model_code };
  }

  /** 409 DEVICE_ALREADY_OWNED when a device has this uniqueId: its owner would lose it to the claimer. */
  private async assertNotRegistered(uniqueId: string): Promise<void> {
    if (await this.store.devices.findByUniqueId(uniqueId)) throw new AppError('DEVICE_ALREADY_OWNED');
  }

  private async requireToken(rawToken: string): Promise<ClaimTokenRow> {
    const token = normaliseClaimToken(rawToken);
    const row = token ? await this.store.tokens.find(token) : undefined;
    if (!row) throw new AppError('CLAIM_TOKEN_NOT_FOUND');
    return row;
  }
}

function newRow(token: string, input: NewClaimToken, now: number): Insertable<ClaimTokensTable> {
  return {
    token,
    unique_id: input.uniqueId ?? null,
    model_code: input.modelCode,
    model_name: input.modelName ?? null,
    status: 'unclaimed',
    claimed_by: null,
    claimed_at: null,
    device_id: null,
    created_at: now,
    updated_at: now,
  };
}
