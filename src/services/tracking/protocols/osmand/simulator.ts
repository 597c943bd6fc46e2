// The OsmAnd tracker as the simulator, the tests and the benchmarks drive it: the frames it writes (each the
// inverse of the decoder for the fields it writes) and how it reads the server. Loaded on demand by the registry's
// `simulator`: the server never loads it.

import { numberedIds } from '../simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../simulated-tracker.ts';

/** The query string of an OsmAnd report (`?id=…&lat=…`), as the Traccar Client's classic mode sends it. */
export function osmAndQuery(id: string, fix: DeviceFix): string {
  const query = new URLSearchParams({
    id,
    lat: String(fix.latitude),
    lon: String(fix.longitude),
    timestamp: String(Math.floor(fix.time.getTime() / 1000)),
    speed: String(fix.speed),
    bearing: String(fix.course),
    altitude: String(fix.altitude),
    valid: String(fix.valid),
  });
  if (fix.ignition !== undefined) query.set('ignition', String(fix.ignition));
  if (fix.motion !== undefined) query.set('motion', String(fix.motion));
  if (fix.odometer !== undefined) query.set('odometer', String(Math.round(fix.odometer)));
  if (fix.sos) query.set('alarm', 'sos');
  return query.toString();
}

export const osmandTracker: SimulatedTracker = {
  uniqueId: numberedIds('', 6),
  login: () => [],
  report: (uniqueId, fix) => Buffer.from(osmAndQuery(uniqueId, fix), 'latin1'),
};
