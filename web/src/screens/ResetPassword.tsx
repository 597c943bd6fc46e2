import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import type { FormEvent } from 'react';
import { api } from '../api.ts';
import { t } from '../i18n.ts';
import { Link, useLocation } from '../router.tsx';
import { ErrorNote, Field, NewPasswordField, Note, Page } from '../ui.tsx';

export default function ResetPassword() {
  const { query } = useLocation();
  const token = query.get('token');
  return token ? <ChoosePassword token={token} /> : <RequestLink />;
}

function RequestLink() {
  const [email, setEmail] = useState('');
  const request = useMutation({ mutationFn: () => api.requestPasswordReset(email.trim()) });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    request.mutate();
  };
  return (
    <Page title={t.reset.requestTitle}>
      {request.isSuccess ? (
        <Note kind="success">{t.reset.requested}</Note>
      ) : (
        <form onSubmit={submit} className="stack">
          <p>{t.reset.requestHint}</p>
          <Field label={t.fields.email} type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
          <ErrorNote error={request.error} />
          <button type="submit" className="primary" disabled={request.isPending}>
            {t.reset.requestSubmit}
          </button>
        </form>
      )}
      <p>
        <Link to="/login">{t.signIn.title}</Link>
      </p>
    </Page>
  );
}

function ChoosePassword({ token }: { token: string }) {
  const [password, setPassword] = useState('');
  const update = useMutation({ mutationFn: () => api.updatePassword(token, password) });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    update.mutate();
  };
  return (
    <Page title={t.reset.updateTitle}>
      {update.isSuccess ? (
        <>
          <Note kind="success">{t.reset.updated}</Note>
          <Link to="/login" className="button primary">
            {t.verify.toSignIn}
          </Link>
        </>
      ) : (
        <form onSubmit={submit} className="stack">
          <NewPasswordField label={t.fields.newPassword} value={password} onChange={setPassword} />
          <ErrorNote error={update.error} />
          <button type="submit" className="primary" disabled={update.isPending}>
            {t.reset.updateSubmit}
          </button>
        </form>
      )}
    </Page>
  );
}
