import type { Kysely } from 'kysely';
import { TableAccess } from '../../platform/db/table-access.ts';
import { EventRepository } from './events/repository.ts';
import { GeofenceRepository } from './geofences/repository.ts';
import { PositionRepository } from './positions/repository.ts';
import type { TrackingTables } from './tables.ts';

export interface TrackingRepositories {
  positions: PositionRepository;
  events: EventRepository;
  geofences: GeofenceRepository;
}

/** The module's repositories, outside or inside one transaction. */
export class TrackingStore extends TableAccess<TrackingTables> implements TrackingRepositories {
  readonly positions: PositionRepository;
  readonly events: EventRepository;
  readonly geofences: GeofenceRepository;

  constructor(db: Kysely<TrackingTables>) {
    super(db);
    this.positions = new PositionRepository(db);
    this.events = new EventRepository(db);
    this.geofences = new GeofenceRepository(db);
  }

  /** `trx` is handed on for what else must commit with the work: a fact recorded in the outbox. */
  transaction<T>(work: (repositories: TrackingRepositories, trx: Kysely<TrackingTables>) => Promise<T>): Promise<T> {
    return this.db.transaction().execute((trx) =>
      work({ positions: new PositionRepository(trx), events: new EventRepository(trx), geofences: new GeofenceRepository(trx) }, trx),
    );
  }
}
