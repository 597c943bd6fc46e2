import { useMutation } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import type { FormEvent } from 'react';
import { api } from '../api.ts';
import { t } from '../i18n.ts';
import { Link, useLocation } from '../router.tsx';
import { CodeField, ErrorNote, Field, Loading, Note, Page, useCountdown } from '../ui.tsx';

const RESEND_COOLDOWN_SECONDS = 30;

export default function VerifyEmail() {
  const { query } = useLocation();
  const token = query.get('token');
  return token ? <VerifyLink token={token} /> : <VerifyCode initialEmail={query.get('email') ?? ''} justSent={query.has('sent')} />;
}

/** The link of the mail: verifies at once. */
function VerifyLink({ token }: { token: string }) {
  const verify = useMutation({ mutationFn: () => api.verifyEmail(token) });
  const { mutate } = verify;
  useEffect(() => mutate(), [mutate]);
  return (
    <Page title={t.verify.title}>
      {verify.isPending && <Loading label={t.verify.checking} />}
      <ErrorNote error={verify.error} />
      {verify.isError && <VerifyCode initialEmail="" justSent={false} embedded />}
      {verify.isSuccess && <Verified />}
    </Page>
  );
}

function VerifyCode({ initialEmail, justSent, embedded = false }: { initialEmail: string; justSent: boolean; embedded?: boolean }) {
  const [email, setEmail] = useState(initialEmail);
  const [code, setCode] = useState('');
  const [left, startCountdown] = useCountdown();
  useEffect(() => {
    // On arrival: the mail was sent by the sign-up that led here.
    if (justSent) startCountdown(RESEND_COOLDOWN_SECONDS);
  }, [justSent, startCountdown]);
  const verify = useMutation({ mutationFn: () => api.verifyCode(email.trim(), code) });
  const resend = useMutation({ mutationFn: () => api.resendVerification(email.trim()), onSuccess: () => startCountdown(RESEND_COOLDOWN_SECONDS) });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    verify.mutate();
  };
  if (verify.isSuccess) return embedded ? <Verified /> : <Page title={t.verify.title}><Verified /></Page>;
  const form = (
    <>
      <p>{initialEmail ? t.verify.sentTo(initialEmail) : t.verify.askEmail}</p>
      <form onSubmit={submit} className="stack">
        {!initialEmail && (
          <Field label={t.fields.email} type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
        )}
        <CodeField value={code} onChange={setCode} />
        <ErrorNote error={verify.error} />
        <button type="submit" className="primary" disabled={verify.isPending}>
          {t.verify.submit}
        </button>
      </form>
      <button type="button" className="link" disabled={left > 0 || resend.isPending || !email} onClick={() => resend.mutate()}>
        {left > 0 ? t.verify.resendIn(left) : t.verify.resend}
      </button>
      {resend.isSuccess && <Note kind="success">{t.verify.resent}</Note>}
      <ErrorNote error={resend.error} />
      <p>
        <Link to="/login">{t.signIn.title}</Link>
      </p>
    </>
  );
  return embedded ? form : <Page title={t.verify.title}>{form}</Page>;
}

function Verified() {
  return (
    <>
      <Note kind="success">{t.verify.done}</Note>
      <Link to="/login" className="button primary">
        {t.verify.toSignIn}
      </Link>
    </>
  );
}
