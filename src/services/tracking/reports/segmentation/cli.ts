import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import pino from 'pino';
import type { Config } from '../../../../config.ts';
import { openDatabase } from '../../../../platform/db/database.ts';
import type { Database } from '../../../../platform/db/database.ts';
import { migrateModules } from '../../../../platform/db/migrations.ts';
import { engineSettings } from '../../ingest/settings.ts';
import { trackingMigrations } from '../../migrations/index.ts';
import type { TrackingTables } from '../../tables.ts';
import { systemClock } from '../../throttled-writer.ts';
import { SegmentationRepository } from './repository.ts';
import { Segmentation } from './service.ts';

export const REPORTS_USAGE = `  reports rebuild [--device ID] [--from ISO] [--to ISO]
             recompute trips, stops and hourly sums from the positions (after a change of the motion settings or an
             import): every device, or one; from the checkpoint before --from (default: the first position) through
             the latest position; --from/--to without --device take the devices with positions in that window`;

export interface ReportsCliOutput {
  out(text: string): void;
  error(text: string): void;
  /** Whether `error` writes to a terminal: the progress bar is drawn there. */
  tty: boolean;
}

const consoleOutput: ReportsCliOutput = {
  out: (text) => process.stdout.write(text),
  error: (text) => process.stderr.write(text),
  tty: process.stderr.isTTY === true,
};

/** The attributes of devices (their overrides of the motion rules), read by the caller from the devices module. */
export type DeviceAttributesReader = (database: Database) => (ids: readonly number[]) => Promise<Map<number, Readonly<Record<string, unknown>>>>;

/** `npm run cli -- reports …` against DATABASE_URL. Returns the exit code. */
export async function runReportsCommand(args: string[], config: Config, deviceAttributes: DeviceAttributesReader, output: ReportsCliOutput = consoleOutput): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { device: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' } } });
  } catch (error) {
    output.error(`${(error as Error).message}\nUsage:\n${REPORTS_USAGE}\n`);
    return 1;
  }
  const { device, from, to } = parsed.values;
  const deviceId = device === undefined ? undefined : Number(device);
  const fromTime = from === undefined ? undefined : Date.parse(from);
  const toTime = to === undefined ? undefined : Date.parse(to);
  const problem =
    parsed.positionals.length !== 1 || parsed.positionals[0] !== 'rebuild'
      ? 'unknown command'
      : deviceId !== undefined && !(Number.isSafeInteger(deviceId) && deviceId > 0)
        ? `--device must be a device id, got '${device}'`
        : fromTime !== undefined && Number.isNaN(fromTime)
          ? `--from must be an ISO 8601 time, got '${from}'`
          : toTime !== undefined && Number.isNaN(toTime)
            ? `--to must be an ISO 8601 time, got '${to}'`
            : fromTime !== undefined && toTime !== undefined && fromTime > toTime
              ? '--from must not be after --to'
              : undefined;
  if (problem) {
    output.error(`${problem}\nUsage:\n${REPORTS_USAGE}\n`);
    return 1;
  }

  const database = openDatabase(config.database);
  try {
    await migrateModules(database, [trackingMigrations]);
    const repository = new SegmentationRepository(database.db as Kysely<TrackingTables>);
    const segmentation = new Segmentation({
      repository,
      deviceAttributes: deviceAttributes(database),
      settings: engineSettings(config.eventDefaults),
      delayMs: config.segmentation.delayMs,
      clock: systemClock,
      log: pino({ level: 'silent' }),
    });
    const deviceIds =
      deviceId !== undefined
        ? [deviceId]
        : fromTime !== undefined || toTime !== undefined
          ? await repository.devicesWithPositionsBetween(fromTime ?? 0, toTime ?? Number.MAX_SAFE_INTEGER)
          : await segmentation.devicesToRebuild();
    const started = Date.now();
    const positions = await segmentation.rebuild(deviceIds, fromTime, (done, taken) => {
      if (output.tty) output.error(`\r${progressBar(done, deviceIds.length)} ${done}/${deviceIds.length} devices, ${taken} positions`);
    });
    if (output.tty && deviceIds.length > 0) output.error('\n');
    output.out(`Rebuilt ${deviceIds.length} device(s) from ${positions} position(s) in ${((Date.now() - started) / 1000).toFixed(1)} s.\n`);
    return 0;
  } finally {
    await database.close();
  }
}

function progressBar(done: number, total: number, width = 30): string {
  const filled = total === 0 ? width : Math.round((done / total) * width);
  return `[${'#'.repeat(filled)}${' '.repeat(width - filled)}]`;
}
