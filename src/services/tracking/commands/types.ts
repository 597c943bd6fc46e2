import type { CommandType } from '../protocols/command-types.ts';

export const COMMAND_STATUSES = ['queued', 'sent', 'delivered', 'expired', 'failed'] as const;
export type CommandStatus = (typeof COMMAND_STATUSES)[number];

/** The Command of DESIGN §5.7, as the API answers it (times ISO 8601). */
export interface CommandView {
  id: number;
  deviceId: number;
  type: CommandType;
  attributes: Record<string, unknown>;
  status: CommandStatus;
  createdAt: string;
  sentAt: string | null;
}

/** A command saved by a user for later sends (no device). */
export interface SavedCommandView {
  id: number;
  description: string;
  type: CommandType;
  attributes: Record<string, unknown>;
  /** Whether an administrator created it: every user may send it, limitCommands users too. */
  byAdministrator: boolean;
  createdAt: string;
}
