import { isoOrNull } from '../../../platform/http/schemas.ts';
import type { CommandType } from '../protocols/command-types.ts';
import type { CommandRow, SavedCommandRow } from './repository.ts';
import type { CommandStatus, CommandView, SavedCommandView } from './types.ts';

export function commandView(row: CommandRow): CommandView {
  return {
    id: row.id,
    deviceId: row.device_id,
    type: row.type as CommandType,
    attributes: JSON.parse(row.attributes) as Record<string, unknown>,
    status: row.status as CommandStatus,
    createdAt: new Date(row.created_at).toISOString(),
    sentAt: isoOrNull(row.sent_at),
  };
}

/** The Command as JSON text, key order as the API's schema writes it, for the live socket. */
export function commandJson(view: CommandView): string {
  return JSON.stringify(view);
}

export function savedCommandView(row: SavedCommandRow): SavedCommandView {
  return {
    id: row.id,
    description: row.description,
    type: row.type as CommandType,
    attributes: JSON.parse(row.attributes) as Record<string, unknown>,
    byAdministrator: row.by_administrator === 1,
    createdAt: new Date(row.created_at).toISOString(),
  };
}
