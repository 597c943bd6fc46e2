import assert from 'node:assert/strict';
import type { DeviceFix } from '../../src/services/tracking/protocols/simulated-tracker.ts';
import { callProcess } from './processes.ts';

/** The positions a server acknowledged to simulated trackers (runSimulation's onAcknowledged), by uniqueId. */
export interface AcknowledgedLog {
  record: (uniqueId: string, fix: DeviceFix) => void;
  count(): number;
  /** Acknowledgement times (epoch ms) of one tracker, in order. */
  times(uniqueId: string): readonly number[];
  /** Fix times (epoch ms) acknowledged, by uniqueId. */
  readonly fixes: ReadonlyMap<string, readonly number[]>;
}

export function acknowledgedLog(): AcknowledgedLog {
  const fixes = new Map<string, number[]>();
  const times = new Map<string, number[]>();
  let count = 0;
  return {
    record(uniqueId, fix) {
      count++;
      if (!fixes.has(uniqueId)) fixes.set(uniqueId, []);
      if (!times.has(uniqueId)) times.set(uniqueId, []);
      fixes.get(uniqueId)?.push(fix.time.getTime());
      times.get(uniqueId)?.push(Date.now());
    },
    count: () => count,
    times: (uniqueId) => times.get(uniqueId) ?? [],
    fixes,
  };
}

/**
 * Reads every tracker's history through the API and finds each acknowledged position stored exactly
 * once, and nothing else stored (the trackers send an unacknowledged report again until it is
 * acknowledged, so a report stored without its acknowledgement would be stored twice). Fix times are
 * compared to the second: OsmAnd sends no finer.
 */
export async function assertStoredOnce(base: string, token: string, log: AcknowledgedLog): Promise<void> {
  const devices = (await callProcess(base, 'GET', '/api/devices', token)).body as { id: number; uniqueId: string }[];
  const from = new Date(Math.min(...[...log.fixes.values()].flat()) - 3_600_000).toISOString();
  const to = new Date(Date.now() + 3_600_000).toISOString();
  for (const [uniqueId, fixes] of log.fixes) {
    const device = devices.find((candidate) => candidate.uniqueId === uniqueId);
    assert.ok(device, `device ${uniqueId}`);
    const history = await callProcess(base, 'GET', `/api/positions?deviceId=${device.id}&from=${from}&to=${to}`, token);
    assert.equal(history.status, 200);
    const stored = (history.body as { fixTime: string }[]).map((position) => Math.floor(Date.parse(position.fixTime) / 1000)).sort();
    const acknowledged = fixes.map((time) => Math.floor(time / 1000)).sort();
    assert.deepEqual(stored, acknowledged, `${uniqueId}: stored fix seconds against acknowledged ones`);
  }
}
