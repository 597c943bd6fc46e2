import type { DeviceRecord } from '../../devices/access.ts';
import type { NewPosition } from '../api.ts';
import type { DeviceContext, DeviceEngineState, EngineSettings, StoredPosition } from '../engine/index.ts';

/** Everything ingestion keeps in memory about one device. */
export interface DeviceSlot {
  id: number;
  record: DeviceRecord;
  /** When the record was last read. */
  checkedAt: number;
  /** Deleted, disabled or expired: further messages are refused. */
  refused: boolean;
  /**
   * The latest stored position in fix-time order: what a status report is merged into (Traccar's
   * last location). Moves only once a write has committed.
   */
  last: NewPosition | null;
  /** The latest stored position has been read and the engine state seeded from it. */
  loaded: boolean;
  loading: Promise<void> | undefined;
  engine: DeviceEngineState;
  /** Open TCP connections of the device: it goes offline when the last one closes. */
  sessions: number;
}

/** A delivery's stored rows, each flagged in order (moved the latest) or not: what the event engine runs over. */
export interface StoredDelivery {
  slot: DeviceSlot;
  positions: StoredPosition[];
  inOrder: boolean[];
}

export function deviceContext(slot: DeviceSlot, settings: EngineSettings): DeviceContext {
  return { deviceAttributes: slot.record.attributes, settings };
}
