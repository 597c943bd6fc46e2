import { Type } from 'typebox';

/** Request fields: bounded, and bodies refuse unknown properties. */
export const EmailField = Type.String({ format: 'email', minLength: 3, maxLength: 254, description: 'E-mail address (case-insensitive)' });
/** Long enough for any allowed password (128) to arrive and be judged by the password rules. */
export const PasswordField = Type.String({ minLength: 1, maxLength: 1024 });
export const OpaqueTokenField = Type.String({ minLength: 1, maxLength: 512 });
export const TwoFactorCodeField = Type.String({ minLength: 1, maxLength: 32, description: 'A 6-digit TOTP code or a backup code' });

export const strictBody = { additionalProperties: false } as const;

export const User = Type.Object(
  {
    id: Type.Integer(),
    email: Type.String(),
    name: Type.Union([Type.String(), Type.Null()]),
    phone: Type.Union([Type.String(), Type.Null()]),
    administrator: Type.Boolean(),
    disabled: Type.Boolean(),
    readonly: Type.Boolean(),
    deviceReadonly: Type.Boolean(),
    limitCommands: Type.Boolean(),
    expirationTime: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    attributes: Type.Record(Type.String(), Type.Unknown(), {
      description: 'timezone, language, termsAcceptedVersion, privacyAcceptedVersion, termsAcceptedAt; computed: emailVerified, twoFactorEnabled',
    }),
  },
  { description: 'User (spec §2.1)' },
);

export const MessageResponse = Type.Object({ message: Type.String() });
export const MessageEmailResponse = Type.Object({ message: Type.String(), email: Type.String() });

export const LoginResponse = Type.Object({
  accessToken: Type.String(),
  refreshToken: Type.String(),
  expiresIn: Type.Integer({ description: 'Seconds the access token lives' }),
  user: User,
});

export const Login2FARequiredResponse = Type.Object({
  require_2fa: Type.Literal(true),
  temp_token: Type.String(),
  type: Type.Union([Type.Literal('totp'), Type.Literal('email')]),
  message: Type.String(),
});

export const NoContent = Type.Null({ description: 'No content' });
