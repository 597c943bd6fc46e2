import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gl200Protocol } from '../../../../src/services/tracking/protocols/gl200/decoder.ts';
import { gt06Protocol } from '../../../../src/services/tracking/protocols/gt06/decoder.ts';
import { h02Protocol } from '../../../../src/services/tracking/protocols/h02/decoder.ts';
import { teltonikaProtocol } from '../../../../src/services/tracking/protocols/teltonika/decoder.ts';
import { enforcePlausibility } from '../../../../src/services/tracking/protocols/plausibility.ts';
import type { ConnectionState, DecodedMessage, TcpProtocol } from '../../../../src/services/tracking/protocols/types.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW, assertWellFormed } from './protocol-test-helpers.ts';
import { ATTRIBUTE_REPLAY } from './traccar-replay/attributes.ts';
import { GL200_BINARY_REPLAY } from './traccar-replay/gl200-binary.ts';
import { GL200_REPLAY } from './traccar-replay/gl200.ts';
import { GT06_REPLAY } from './traccar-replay/gt06.ts';
import { H02_REPLAY } from './traccar-replay/h02.ts';
import type { ReplayRow } from './traccar-replay/replay-row.ts';
import { TELTONIKA_REPLAY } from './traccar-replay/teltonika.ts';

/**
 * Parity with Traccar, measured: every frame of Traccar's decoder tests for a protocol goes through our decoder the
 * way Traccar's test feeds it (one frame, straight to the decoder) and must give the tabled time, validity and
 * coordinates. `gaps` are the frames Traccar turns into a located position and we do not, each with its reason.
 */
interface ReplayCase {
  protocol: TcpProtocol;
  /** Which of the protocol's Traccar tests, where it has more than one. */
  test?: string;
  rows: readonly ReplayRow[];
  state(): ConnectionState;
  gaps: ReadonlyMap<number, string>;
}

const CASES: readonly ReplayCase[] = [
  {
    protocol: gt06Protocol,
    rows: GT06_REPLAY,
    state: () => ({}),
    gaps: new Map(),
  },
  { protocol: teltonikaProtocol, rows: TELTONIKA_REPLAY, state: () => ({ teltonikaHandshakeDone: true }), gaps: new Map() },
  { protocol: h02Protocol, rows: H02_REPLAY, state: () => ({}), gaps: new Map() },
  { protocol: gl200Protocol, test: 'text', rows: GL200_REPLAY, state: () => ({}), gaps: new Map() },
  { protocol: gl200Protocol, test: 'binary', rows: GL200_BINARY_REPLAY, state: () => ({}), gaps: new Map() },
];

function frameOf(row: ReplayRow): Buffer {
  return row.hex !== undefined ? Buffer.from(row.hex, 'hex') : Buffer.from(row.text ?? '', 'latin1');
}

function decodeRow(replay: ReplayCase, row: ReplayRow): DecodedMessage | 'refused' {
  try {
    const message = replay.protocol.decode(frameOf(row), replay.state(), NOW);
    assertWellFormed(message);
    return message;
  } catch (error) {
    if (error instanceof ProtocolError) {
      return 'refused';
    }
    throw error;
  }
}

function assertExpected(row: ReplayRow, actual: DecodedMessage | 'refused'): void {
  const where = `Traccar test line ${row.line}`;
  if (row.expect === 'refused' || actual === 'refused') {
    assert.equal(actual, row.expect, where);
    return;
  }
  assert.equal(actual.statuses.length, row.expect.statuses, `${where}: attribute-only reports`);
  assert.equal(actual.positions.length, row.expect.positions.length, `${where}: positions`);
  row.expect.positions.forEach(([time, valid, latitude, longitude], index) => {
    const position = actual.positions[index]!;
    assert.equal(position.fixTime.toISOString().replace('.000Z', 'Z'), time, `${where}: time`);
    assert.equal(position.valid, valid, `${where}: validity`);
    assert.ok(Math.abs(position.latitude - latitude) <= 1e-5, `${where}: latitude ${position.latitude} != ${latitude}`);
    assert.ok(Math.abs(position.longitude - longitude) <= 1e-5, `${where}: longitude ${position.longitude} != ${longitude}`);
  });
}

for (const replay of CASES) {
  const name = replay.test === undefined ? replay.protocol.name : `${replay.protocol.name} ${replay.test}`;
  describe(`${name}: Traccar's decoder test frames`, () => {
    it('decode to the tabled time, validity and coordinates', () => {
      for (const row of replay.rows) {
        assertExpected(row, decodeRow(replay, row));
      }
    });

    it('give a located position wherever Traccar does, but for the listed gaps', (context) => {
      const located = replay.rows.filter((row) => row.traccar === 'location');
      const missing = located
        .filter((row) => { const message = decodeRow(replay, row); return message === 'refused' || message.positions.length === 0; })
        .map((row) => row.line);
      assert.deepEqual(missing, [...replay.gaps.keys()]);
      context.diagnostic(`${name}: ${located.length - missing.length} of ${located.length} located frames`);
    });

    it('never turn a frame Traccar drops into a position', () => {
      for (const row of replay.rows.filter((candidate) => candidate.traccar === 'nothing')) {
        const message = decodeRow(replay, row);
        assert.ok(message === 'refused' || message.positions.length === 0, `Traccar test line ${row.line}`);
      }
    });

    it("give each command answer's text as the result the server ties to its command, and no result where none answers", () => {
      for (const row of replay.rows.filter((candidate) => candidate.owner === 'commands')) {
        const where = `Traccar test line ${row.line}`;
        const message = decodeRow(replay, row);
        assert.notEqual(message, 'refused', where);
        if (message === 'refused') continue;
        // What the server checks before it ties the answer to a command: a refused answer would close the connection.
        enforcePlausibility(message, NOW);
        const results = [...message.positions, ...message.statuses].map((report) => report.attributes['result']).filter((result) => result !== undefined);
        assert.deepEqual(results, row.answer === null ? [] : [row.answer], where);
        if (replay.protocol.name === 'gt06' && row.answer !== null) assert.equal(typeof message.answerTo, 'number', `${where}: the server flag`);
      }
    });
  });
}

describe("Traccar's attribute asserts", () => {
  const byName = new Map(CASES.map((replay) => [replay.protocol.name, replay]));

  it('give the attribute Traccar expects of each frame, but for the listed gaps', (context) => {
    const asserted = ATTRIBUTE_REPLAY.filter((row) => row.gap === undefined);
    for (const row of asserted) {
      const replay = byName.get(row.protocol)!;
      const frame = row.hex !== undefined ? Buffer.from(row.hex, 'hex') : Buffer.from(row.text ?? '', 'latin1');
      const message = replay.protocol.decode(frame, replay.state(), NOW);
      const [report] = [...message.positions, ...message.statuses];
      assert.ok(report, `${row.protocol} line ${row.line}: a report`);
      const actual = row.key === 'altitude' && 'altitude' in report ? report.altitude : report.attributes[row.key];
      const where = `${row.protocol} line ${row.line}: ${row.key}`;
      if (row.value === null) {
        assert.equal(actual, undefined, where);
      } else if (row.key === 'alarm') {
        assert.ok(String(actual).split(',').includes(String(row.value)), `${where}: ${String(actual)}`);
      } else {
        assert.equal(actual, row.value, where);
      }
    }
    context.diagnostic(`${asserted.length} of ${ATTRIBUTE_REPLAY.length} attribute asserts`);
  });
});
