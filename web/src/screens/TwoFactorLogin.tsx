import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { FormEvent } from 'react';
import { api, errorCode } from '../api.ts';
import { t } from '../i18n.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import { queryKeys } from '../queryKeys.ts';
import { CodeField, ErrorNote, Field, Note, Page, useCountdown } from '../ui.tsx';
import { forgetTwoFactor, pendingTwoFactor } from './two-factor-state.ts';

export default function TwoFactorLogin() {
  const { query } = useLocation();
  const queryClient = useQueryClient();
  const [initial] = useState(() => {
    const fromUrl = query.get('token');
    const type = query.get('type') === 'email' ? 'email' : 'totp';
    return fromUrl ? { token: fromUrl, type } : pendingTwoFactor();
  });
  const [code, setCode] = useState('');
  const [backup, setBackup] = useState(false);
  const [left, startCountdown] = useCountdown();
  const verify = useMutation({
    mutationFn: () => api.completeTwoFactor(initial?.token ?? '', code.trim()),
    onSuccess: (user) => {
      forgetTwoFactor();
      queryClient.setQueryData(queryKeys.profile, user);
      navigate('/', { replace: true });
    },
  });
  const resend = useMutation({ mutationFn: () => api.resendTwoFactorCode(initial?.token ?? ''), onSuccess: () => startCountdown(30) });

  if (!initial) {
    return (
      <Page title={t.twoFactor.title}>
        <Note>{t.twoFactor.missing}</Note>
        <Link to="/login">{t.signIn.title}</Link>
      </Page>
    );
  }
  const submit = (event: FormEvent) => {
    event.preventDefault();
    verify.mutate();
  };
  const expired = errorCode(verify.error) === 'TEMP_TOKEN_EXPIRED';
  return (
    <Page title={t.twoFactor.title}>
      <p>{backup ? t.twoFactor.backupHint : initial.type === 'email' ? t.twoFactor.emailHint : t.twoFactor.totpHint}</p>
      <form onSubmit={submit} className="stack">
        {backup ? (
          <Field label={t.twoFactor.backupCode} autoComplete="off" required value={code} onChange={(e) => setCode(e.target.value)} />
        ) : (
          <CodeField value={code} onChange={setCode} />
        )}
        <ErrorNote error={verify.error} />
        {expired && <Link to="/login">{t.signIn.title}</Link>}
        <button type="submit" className="primary" disabled={verify.isPending || expired}>
          {t.twoFactor.submit}
        </button>
      </form>
      <div className="row">
        <button type="button" className="link" onClick={() => { setBackup(!backup); setCode(''); }}>
          {backup ? t.twoFactor.useCode : t.twoFactor.useBackup}
        </button>
        {initial.type === 'email' && !backup && (
          <button type="button" className="link" disabled={left > 0 || resend.isPending} onClick={() => resend.mutate()}>
            {left > 0 ? t.twoFactor.resendIn(left) : t.twoFactor.resend}
          </button>
        )}
      </div>
      {resend.isSuccess && <Note kind="success">{t.twoFactor.resent}</Note>}
      <ErrorNote error={resend.error} />
      {!expired && (
        <p>
          <Link to="/login">{t.twoFactor.startOver}</Link>
        </p>
      )}
    </Page>
  );
}
