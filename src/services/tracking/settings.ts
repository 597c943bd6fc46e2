import type { EnvReader } from '../../platform/env.ts';

/** The tracking module's settings, read by config.ts with every module's (the ports of its device listeners are read there still). */
export interface TrackingSettings {
  statusTimeout: number;
  /** COMMAND_TTL: seconds a queued command waits for its device before it expires. */
  commandTtl: number;
  /**
   * docs/commands.md, "Limits": MAX_QUEUED_COMMANDS_PER_DEVICE commands waiting for one device, COMMAND_SEND_RATE sends
   * per user per minute, COMMAND_HISTORY_DAYS days a command stays (0: as long as its device's history).
   */
  commands: { queuedPerDevice: number; sendsPerMinute: number; historyDays: number };
  /**
   * Group commit of ingested positions: a flush writes at most `batchSize` rows, waiting at most `batchDelay` ms for them.
   * `connectionsPerIp`: device connections (every listener together) one remote address may hold open at once.
   */
  ingest: { batchSize: number; batchDelay: number; connectionsPerIp: number };
  /**
   * The retention job (docs/tracking.md, "Retention"): RETENTION_INTERVAL seconds between runs on this instance (0: this
   * instance never runs it), RETENTION_CHUNK rows deleted by one statement at most.
   */
  retention: { interval: number; chunkSize: number };
  /** docs/reports.md, "Limits": REPORT_MAX_DEVICES devices one report covers at most, REPORT_MAX_DAYS the longest window. */
  reports: { maxDevices: number; maxDays: number };
  /** EVENT_DEFAULTS: server-wide defaults of the event rules by setting name (names checked by the tracking module). */
  eventDefaults: Record<string, number | boolean>;
  /**
   * Trips, stops and hourly sums (docs/reports.md, "Segmentation"): REPORTS_SEGMENTATION off writes none of them as
   * positions arrive (`reports rebuild` writes them later); REPORTS_SEGMENTATION_DELAY ms a device's stored positions
   * wait to be segmented together.
   */
  segmentation: { enabled: boolean; delayMs: number };
}

export function readTrackingSettings(read: EnvReader): TrackingSettings {
  return {
    statusTimeout: read.int('STATUS_TIMEOUT', 600, 1, 86_400 * 365),
    commandTtl: read.int('COMMAND_TTL', 86_400, 1, 86_400 * 365),
    commands: {
      queuedPerDevice: read.int('MAX_QUEUED_COMMANDS_PER_DEVICE', 100, 1, 100_000),
      sendsPerMinute: read.int('COMMAND_SEND_RATE', 120, 1, 100_000),
      historyDays: read.int('COMMAND_HISTORY_DAYS', 90, 0, 36_500),
    },
    ingest: {
      batchSize: read.int('INGEST_BATCH_SIZE', 1000, 1, 10_000),
      batchDelay: read.int('INGEST_BATCH_DELAY', 2, 0, 1000),
      connectionsPerIp: read.int('DEVICE_CONNECTIONS_PER_IP', 1000, 1, 1_000_000),
    },
    retention: {
      interval: read.int('RETENTION_INTERVAL', 3600, 0, 7 * 86_400),
      chunkSize: read.int('RETENTION_CHUNK', 5000, 100, 100_000),
    },
    reports: {
      maxDevices: read.int('REPORT_MAX_DEVICES', 1000, 1, 100_000),
      maxDays: read.int('REPORT_MAX_DAYS', 366, 1, 36_600),
    },
    eventDefaults: read.settings('EVENT_DEFAULTS'),
    segmentation: {
      enabled: read.oneOf('REPORTS_SEGMENTATION', 'on', ['on', 'off']) === 'on',
      delayMs: read.int('REPORTS_SEGMENTATION_DELAY', 5000, 0, 60_000),
    },
  };
}
