// Each protocol's simulator frames: what a tracker of that protocol sends to log in and to report a fix. The protocol
// registry names one of these per protocol (loaded on demand, so the server never loads the encoders); the simulator,
// the tests and the benchmarks send them.
import {
  galileoHead,
  galileoRecord,
  gl200Heartbeat,
  gl200Location,
  gps103Heartbeat,
  gps103Location,
  gps103Login,
  gt06Location,
  gt06Login,
  h02Location,
  jt808Auth,
  jt808Location,
  jt808Register,
  meitrackAac,
  meitrackLocation,
  osmAndQuery,
  ruptelaIdentification,
  ruptelaRecords,
  suntechLocation,
  teltonikaAvlPacket,
  teltonikaHandshake,
  tk103Location,
  tk103Login,
  watchLink,
  watchLocation,
  wialonData,
  wialonLogin,
} from './encoders.ts';
import type { DeviceFix } from './encoders.ts';

export interface SimulatorFrames {
  /** The unique id of the `n`-th simulated device, in the protocol's own id format. */
  uniqueId(n: number): string;
  /** What a tracker sends to log in, in order; empty where it names itself in every report. */
  login(uniqueId: string, serial: number): Buffer[];
  /** One report of `fix` (OsmAnd: the request's query string); `serial` where the protocol numbers its messages. */
  report(uniqueId: string, fix: DeviceFix, serial: number): Buffer;
}

const digits = (prefix: string, length: number) => (n: number) => `${prefix}${String(n).padStart(length - prefix.length, '0')}`;

export const osmand: SimulatorFrames = {
  uniqueId: digits('', 6),
  login: () => [],
  report: (uniqueId, fix) => Buffer.from(osmAndQuery(uniqueId, fix), 'latin1'),
};

export const teltonika: SimulatorFrames = {
  uniqueId: digits('35630704245', 15),
  login: (uniqueId) => [teltonikaHandshake(uniqueId)],
  report: (_uniqueId, fix) => teltonikaAvlPacket([fix]),
};

export const gt06: SimulatorFrames = {
  uniqueId: digits('35971004909', 15),
  login: (uniqueId, serial) => [gt06Login(uniqueId, serial)],
  report: (_uniqueId, fix, serial) => gt06Location(fix, serial),
};

export const h02: SimulatorFrames = {
  uniqueId: digits('421006', 10),
  login: () => [],
  report: (uniqueId, fix) => h02Location(uniqueId, fix),
};

export const jt808: SimulatorFrames = {
  uniqueId: digits('8613', 12),
  // Registration, then authentication with the code it returns (the terminal id, as Traccar answers).
  login: (uniqueId, serial) => [jt808Register(uniqueId, serial), jt808Auth(uniqueId, uniqueId, serial + 1)],
  report: (uniqueId, fix, serial) => jt808Location(uniqueId, fix, serial),
};

export const gps103: SimulatorFrames = {
  uniqueId: digits('86358601', 15),
  login: (uniqueId) => [gps103Login(uniqueId)],
  // Reports are not answered: the heartbeat after one is, once the report is stored.
  report: (uniqueId, fix) => Buffer.concat([gps103Location(uniqueId, fix), gps103Heartbeat(uniqueId)]),
};

export const tk103: SimulatorFrames = {
  uniqueId: digits('0270', 12),
  login: (uniqueId) => [tk103Login(uniqueId)],
  report: (uniqueId, fix) => tk103Location(uniqueId, fix, 'BP05'),
};

export const wialon: SimulatorFrames = {
  uniqueId: digits('86300539', 15),
  login: (uniqueId) => [wialonLogin(uniqueId)],
  report: (_uniqueId, fix) => wialonData(fix),
};

export const watch: SimulatorFrames = {
  uniqueId: digits('93', 10),
  login: (uniqueId) => [watchLink(uniqueId)],
  report: (uniqueId, fix) => Buffer.concat([watchLocation(uniqueId, fix), watchLink(uniqueId)]),
};

export const meitrack: SimulatorFrames = {
  uniqueId: digits('86102005', 15),
  login: () => [],
  report: (uniqueId, fix) => Buffer.concat([meitrackLocation(uniqueId, fix), meitrackAac(uniqueId)]),
};

export const suntech: SimulatorFrames = {
  uniqueId: digits('5113', 9),
  login: () => [],
  report: (uniqueId, fix) => suntechLocation(uniqueId, fix),
};

export const ruptela: SimulatorFrames = {
  uniqueId: digits('86351405', 15),
  login: (uniqueId) => [ruptelaIdentification(uniqueId)],
  report: (uniqueId, fix) => ruptelaRecords(uniqueId, [fix]),
};

export const galileo: SimulatorFrames = {
  uniqueId: digits('86820400', 15),
  login: (uniqueId) => [galileoHead(uniqueId)],
  report: (_uniqueId, fix) => galileoRecord(fix),
};

export const gl200: SimulatorFrames = {
  uniqueId: digits('86059900', 15),
  login: () => [],
  report: (uniqueId, fix, serial) => Buffer.concat([gl200Location(uniqueId, fix, serial), gl200Heartbeat(uniqueId, fix.time, serial)]),
};
