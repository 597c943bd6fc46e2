import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import type { FormEvent } from 'react';
import { api, settings } from '../api.ts';
import { t } from '../i18n.ts';
import { Link, navigate } from '../router.tsx';
import { ErrorNote, Field, Loading, NewPasswordField, Note, Page } from '../ui.tsx';
import { queryKeys } from '../queryKeys.ts';

export default function Register() {
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [accepted, setAccepted] = useState(false);
  const register = useMutation({
    mutationFn: () => api.register({ email, name, password, termsPrivacyAccepted: accepted }),
    onSuccess: (answer) => navigate(`/verify-email?email=${encodeURIComponent(answer.email)}&sent=1`),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    register.mutate();
  };
  if (!settings.registrationEnabled) {
    return (
      <Page title={t.register.title}>
        <Note>{t.register.disabled}</Note>
        <Link to="/login">{t.signIn.title}</Link>
      </Page>
    );
  }
  return (
    <Page title={t.register.title}>
      <form onSubmit={submit} className="stack">
        <Field label={t.fields.name} autoComplete="name" required maxLength={128} value={name} onChange={(e) => setName(e.target.value)} />
        <Field label={t.fields.email} type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
        <NewPasswordField label={t.fields.password} value={password} onChange={setPassword} />
        <LegalText type="terms" title={t.register.readTerms} />
        <LegalText type="privacy" title={t.register.readPrivacy} />
        <label className="check">
          <input type="checkbox" checked={accepted} onChange={(e) => setAccepted(e.target.checked)} />
          {t.register.terms}
        </label>
        <ErrorNote error={register.error} />
        <button type="submit" className="primary" disabled={register.isPending}>
          {t.register.submit}
        </button>
      </form>
      <p>
        {t.register.haveAccount} <Link to="/login">{t.signIn.title}</Link>
      </p>
    </Page>
  );
}

function LegalText({ type, title }: { type: 'terms' | 'privacy'; title: string }) {
  const [open, setOpen] = useState(false);
  const document = useQuery({ queryKey: queryKeys.legal(type), queryFn: () => api.legalDocument(type), enabled: open });
  return (
    <details onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>{title}</summary>
      {document.isPending && open && <Loading />}
      <ErrorNote error={document.error} />
      {document.data && <div className="legal">{document.data.content}</div>}
    </details>
  );
}
