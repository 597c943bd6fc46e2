import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { FormEvent } from 'react';
import { api, errorCode, settings } from '../api.ts';
import { socialNames, t } from '../i18n.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import { queryKeys } from '../queryKeys.ts';
import { ErrorNote, Field, Note, Page } from '../ui.tsx';
import { rememberTwoFactor } from './two-factor-state.ts';

export default function SignIn() {
  const { query } = useLocation();
  const queryClient = useQueryClient();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const signIn = useMutation({
    mutationFn: () => api.login(email, password),
    onSuccess: (result) => {
      if (result.kind === 'two-factor') {
        rememberTwoFactor(result.tempToken, result.type);
        navigate(`/login/2fa?type=${result.type}`);
      } else {
        queryClient.setQueryData(queryKeys.profile, result.user);
      }
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    signIn.mutate();
  };
  const socialError = query.get('error');

  return (
    <Page title={t.signIn.title}>
      {socialError && <div className="note error" role="alert">{t.signIn.socialFailed(socialError)}</div>}
      <form onSubmit={submit} className="stack">
        <Field label={t.fields.email} type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
        <Field label={t.fields.password} type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        <ErrorNote error={signIn.error} />
        {errorCode(signIn.error) === 'EMAIL_NOT_VERIFIED' && (
          <Link to={`/verify-email?email=${encodeURIComponent(email)}`}>{t.signIn.verifyNow}</Link>
        )}
        <button type="submit" className="primary" disabled={signIn.isPending}>
          {t.signIn.submit}
        </button>
      </form>
      <p>
        <Link to="/reset-password">{t.signIn.forgot}</Link>
      </p>
      {settings.socialProviders.length > 0 && (
        <div className="stack social">
          <p className="divider">{t.signIn.or}</p>
          {settings.socialProviders.map((provider) => (
            <a key={provider} className="button" href={`/api/auth/openid/auth?provider=${provider}`}>
              {t.signIn.with(socialNames[provider] ?? provider)}
            </a>
          ))}
        </div>
      )}
      {settings.registrationEnabled && (
        <Note>
          {t.signIn.noAccount} <Link to="/register">{t.signIn.register}</Link>
        </Note>
      )}
    </Page>
  );
}
