/** The tables the auth module owns; no other module reads them. */
export interface AuthTables {
  sessions: SessionsTable;
}

export interface SessionsTable {
  id: string;
  user_id: number;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  ip: string | null;
  user_agent: string | null;
}
