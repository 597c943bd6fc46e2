import type { UserRepository, UserRow } from './repository.ts';

/** What other modules may know of a user: identity and the flags that govern access. */
export interface UserAccess {
  id: number;
  email: string;
  name: string | null;
  administrator: boolean;
  disabled: boolean;
  readonly: boolean;
  deviceReadonly: boolean;
  limitCommands: boolean;
  /** Epoch milliseconds, or null for never. */
  expirationTime: number | null;
}

/** The auth module's interface for looking users up; in split mode an HTTP client implements it. */
export interface UserDirectory {
  get(id: number): Promise<UserAccess | undefined>;
  findByEmail(email: string): Promise<UserAccess | undefined>;
}

export function toUserAccess(row: UserRow): UserAccess {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    administrator: row.administrator === 1,
    disabled: row.disabled === 1,
    readonly: row.readonly === 1,
    deviceReadonly: row.device_readonly === 1,
    limitCommands: row.limit_commands === 1,
    expirationTime: row.expiration_time,
  };
}

export class LocalUserDirectory implements UserDirectory {
  private readonly users: UserRepository;
  constructor(users: UserRepository) {
    this.users = users;
  }

  async get(id: number): Promise<UserAccess | undefined> {
    const row = await this.users.findById(id);
    return row && toUserAccess(row);
  }

  async findByEmail(email: string): Promise<UserAccess | undefined> {
    const row = await this.users.findByEmail(email);
    return row && toUserAccess(row);
  }
}
