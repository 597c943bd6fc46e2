/** The wire types of the commands API (DESIGN §5.7) and of the plan on the subscription routes (§5.8). */

export type CommandStatus = 'queued' | 'sent' | 'delivered' | 'expired' | 'failed';

export interface Command {
  id: number;
  deviceId: number;
  type: string;
  attributes: Record<string, unknown>;
  status: CommandStatus;
  createdAt: string;
  sentAt: string | null;
}

export interface SavedCommand {
  id: number;
  description: string;
  type: string;
  attributes: Record<string, unknown>;
  byAdministrator: boolean;
  createdAt: string;
}

/** Either a command written out, or a saved one by id. */
export type CommandSendRequest = { deviceId: number; type: string; attributes: Record<string, unknown> } | { deviceId: number; commandId: number };

export type PlanLimitName = 'devices' | 'geofences' | 'shares' | 'notificationRules' | 'historyDays';
export type UsageName = 'devices' | 'geofences' | 'shares' | 'notificationRules';

export interface Plan {
  id: string;
  name: string;
  /** null: no limit. */
  limits: Record<PlanLimitName, number | null>;
  /** channels null: every channel. */
  features: { commands: boolean; reports: boolean; scheduledReports: boolean; channels: string[] | null };
}

export interface SubscriptionSummary {
  id: number;
  provider: string;
  plan_id: string;
  plan_name: string | null;
  status: string;
  current_period_end: string | null;
}

export interface Subscriptions {
  user_id: number;
  subscriptions: SubscriptionSummary[];
  has_active_subscription: boolean;
  plan: Plan;
  /** null: counted by a module the billing process does not run. */
  usage: Record<UsageName, number | null>;
}
