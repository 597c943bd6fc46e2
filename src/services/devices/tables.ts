import type { Generated } from 'kysely';

/** The tables the devices module owns; no other module reads them. */
export interface DevicesTables {
  devices: DevicesTable;
  device_shares: DeviceSharesTable;
  device_invitations: DeviceInvitationsTable;
  claim_tokens: ClaimTokensTable;
}

export interface DevicesTable {
  id: Generated<number>;
  name: string;
  unique_id: string;
  /** online, offline or unknown; maintained by the tracking module. */
  status: string;
  last_update: number | null;
  position_id: number | null;
  phone: string | null;
  model: string | null;
  contact: string | null;
  category: string | null;
  disabled: number;
  expiration_time: number | null;
  group_id: number | null;
  calendar_id: number | null;
  /** JSON object. */
  attributes: string;
  /** A user of the auth module (no foreign key: auth may live in another database). */
  owner_id: number;
  created_at: number;
  updated_at: number;
}

/** One row per (device, user other than the owner): the permission flags are 0/1. */
/** The permission flags (0/1) and bookkeeping that a share and a pending share have alike. */
interface ShareColumns {
  position: number;
  events: number;
  geofences: number;
  notifications: number;
  commands: number;
  shared_by: number;
  created_at: number;
  updated_at: number;
}

export interface DeviceSharesTable extends ShareColumns {
  device_id: number;
  user_id: number;
}

/**
 * A share made to an e-mail address no account had at the time (lower case): it grants nothing
 * until an account with that address looks at its devices, which turns it into a device_shares row.
 */
export interface DeviceInvitationsTable extends ShareColumns {
  device_id: number;
  email: string;
}

export interface ClaimTokensTable {
  /** Normalised: 12 characters of the claim alphabet, upper case, no dashes. */
  token: string;
  /** Null until the token is configured for a device ("device not configured"). */
  unique_id: string | null;
  model_code: string;
  model_name: string | null;
  /** unclaimed, claimed or revoked. */
  status: string;
  claimed_by: number | null;
  claimed_at: number | null;
  /** The device the claim created or took over; null while unclaimed. */
  device_id: number | null;
  created_at: number;
  updated_at: number;
}
