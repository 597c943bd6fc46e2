import type { ModuleMigrations } from '../../../platform/db/migrations.ts';
import * as sessions from './0001-sessions.ts';
import * as users from './0002-users.ts';
import * as authFlows from './0003-auth-flows.ts';
import * as openid from './0004-openid.ts';
import * as sessionSecondFactor from './0005-session-second-factor.ts';
import * as emailTwoFactor from './0006-email-two-factor.ts';

export const authMigrations: ModuleMigrations = {
  module: 'auth',
  migrations: {
    '0001-sessions': sessions,
    '0002-users': users,
    '0003-auth-flows': authFlows,
    '0004-openid': openid,
    '0005-session-second-factor': sessionSecondFactor,
    '0006-email-two-factor': emailTwoFactor,
  },
};
