import { request } from 'undici';

/** The administrator every bench server is created with. */
export const BENCH_ADMIN = { email: 'bench-admin@example.com', password: 'Bench-Password-1' };

/**
 * The environment of a bench server: rate limits off (the load comes from one address), quiet
 * logs, the bench administrator, no metrics listener (a fixed port, 9464, that another process
 * may hold; no bench section reads it), and the device listeners closed unless `overrides` opens some.
 */
export function benchServerEnv(dataDir: string, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    DATA_DIR: dataDir,
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'warn',
    METRICS_PORT: '0',
    ADMIN_EMAIL: BENCH_ADMIN.email,
    ADMIN_PASSWORD: BENCH_ADMIN.password,
    OSMAND_PORT: '0',
    GT06_PORT: '0',
    TELTONIKA_PORT: '0',
    H02_PORT: '0',
    JT808_PORT: '0',
    GPS103_PORT: '0',
    TK103_PORT: '0',
    WIALON_PORT: '0',
    WATCH_PORT: '0',
    MEITRACK_PORT: '0',
    SUNTECH_PORT: '0',
    RUPTELA_PORT: '0',
    GALILEO_PORT: '0',
    GL200_PORT: '0',
    ...overrides,
  };
}

/** Signs the bench administrator in; the access token. */
export function loginBenchAdmin(baseUrl: string): Promise<string> {
  return loginBenchAccount(baseUrl, BENCH_ADMIN);
}

/** Signs an account in by password; the access token. */
export async function loginBenchAccount(baseUrl: string, account: { email: string; password: string }): Promise<string> {
  const response = await request(`${baseUrl}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(account),
  });
  const body = (await response.body.json()) as { accessToken?: string };
  if (response.statusCode !== 200 || !body.accessToken) throw new Error(`bench login failed: ${response.statusCode} ${JSON.stringify(body)}`);
  return body.accessToken;
}
