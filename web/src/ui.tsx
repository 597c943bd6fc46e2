import { useCallback, useEffect, useId, useState } from 'react';
import type { InputHTMLAttributes, ReactNode } from 'react';
import { describeError } from './api.ts';
import { t } from './i18n.ts';
import { Link } from './router.tsx';

export function Field({ label, hint, ...input }: { label: string; hint?: string } & InputHTMLAttributes<HTMLInputElement>) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input id={id} aria-describedby={hint ? `${id}-hint` : undefined} {...input} />
      {hint && (
        <small id={`${id}-hint`} className="hint">
          {hint}
        </small>
      )}
    </div>
  );
}

/** The 6-digit code of a mail or an authenticator app: digits only, as the keyboard offers them. */
export function CodeField({ value, onChange }: { value: string; onChange: (code: string) => void }) {
  return (
    <Field
      label={t.fields.code}
      inputMode="numeric"
      autoComplete="one-time-code"
      pattern="[0-9]{6}"
      maxLength={6}
      required
      value={value}
      onChange={(e) => onChange(e.target.value.replace(/\D/g, ''))}
    />
  );
}

/** A password being chosen, with the rule it must follow. */
export function NewPasswordField({ label, value, onChange }: { label: string; value: string; onChange: (password: string) => void }) {
  return <Field label={label} type="password" autoComplete="new-password" required hint={t.passwordRule} value={value} onChange={(e) => onChange(e.target.value)} />;
}

/** `<input type="datetime-local">` speaks local time without a zone. */
export function localDateTimeInput(date: Date): string {
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

/** An error in plain words, announced to screen readers; 402 links to the plan screen. */
export function ErrorNote({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  if (!error) return null;
  const { text, plan } = describeError(error);
  return (
    <div className="note error" role="alert">
      <span>{text}</span>
      {plan && <Link to="/plan">{t.planLink}</Link>}
      {onRetry && (
        <button type="button" className="link" onClick={onRetry}>
          {t.retry}
        </button>
      )}
    </div>
  );
}

export function Note({ children, kind = 'info' }: { children: ReactNode; kind?: 'info' | 'success' }) {
  return (
    <div className={`note ${kind}`} role="status">
      {children}
    </div>
  );
}

export function Loading({ label = t.loading }: { label?: string }) {
  return (
    <div className="loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      {label}
    </div>
  );
}

/**
 * A whole screen on its way: a heading for screen readers landing on it, and the spinner. Navigation
 * does not move focus to this heading, which the screen's own replaces in a moment.
 */
export function LoadingPage() {
  return (
    <div className="page">
      <h1 className="visually-hidden" data-placeholder="">
        {t.loading}
      </h1>
      <Loading />
    </div>
  );
}

export function Page({ title, children, wide = false }: { title: string; children: ReactNode; wide?: boolean }) {
  useEffect(() => {
    document.title = `${title} · ${t.appName}`;
  }, [title]);
  return (
    <div className={wide ? 'page wide' : 'page'}>
      <h1>{title}</h1>
      {children}
    </div>
  );
}

/** Seconds left before an action may repeat (the resend buttons' 30 s). */
export function useCountdown(): [number, (seconds: number) => void] {
  const [until, setUntil] = useState(0);
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (until <= now) return;
    const timer = setTimeout(() => setNow(Date.now()), 250);
    return () => clearTimeout(timer);
  }, [until, now]);
  const left = Math.max(0, Math.ceil((until - now) / 1000));
  // Stable, so an effect that starts the countdown runs once rather than on every tick.
  const start = useCallback((seconds: number) => {
    const at = Date.now();
    setNow(at);
    setUntil(at + seconds * 1000);
  }, []);
  return [left, start];
}

export function StatusDot({ status }: { status: string }) {
  return <span className={`dot status-${status}`} aria-hidden="true" />;
}
