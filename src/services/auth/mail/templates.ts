import type { MailMessage } from '../../../platform/mail.ts';

export interface VerificationMail {
  appName: string;
  to: string;
  name: string | null;
  link: string;
  code: string;
  ttlSeconds: number;
}

export interface PasswordResetMail {
  appName: string;
  to: string;
  name: string | null;
  link: string;
  ttlSeconds: number;
}

/** Why a second-factor code is mailed: a sign-in, turning e-mail 2FA on, or confirming a change of 2FA. */
export type TwoFactorCodeReason = 'sign-in' | 'setup' | 'confirm';

export interface TwoFactorCodeMail {
  appName: string;
  to: string;
  name: string | null;
  code: string;
  reason: TwoFactorCodeReason;
  ttlSeconds: number;
}

const TWO_FACTOR_TEXTS: Record<TwoFactorCodeReason, { subject: (app: string) => string; purpose: string; unasked: string }> = {
  'sign-in': {
    subject: (app) => `Your ${app} sign-in code`,
    purpose: 'To finish signing in, enter this code',
    unasked: 'If you did not just sign in, someone knows your password: change it.',
  },
  setup: {
    subject: (app) => `Confirm two-factor authentication by e-mail for ${app}`,
    purpose: 'To receive a code by e-mail at every sign-in from now on, enter this code',
    unasked: 'If you did not ask for this, someone may be signed in to your account: change your password.',
  },
  confirm: {
    subject: (app) => `Your ${app} security code`,
    purpose: 'To change your two-factor authentication settings, enter this code',
    unasked: 'If you did not ask for this, someone may be signed in to your account: change your password.',
  },
};

/** The code is in the body only, never in the subject (lock-screen previews show subjects). */
export function twoFactorCodeMail(mail: TwoFactorCodeMail): MailMessage {
  const texts = TWO_FACTOR_TEXTS[mail.reason];
  const lasts = duration(mail.ttlSeconds);
  const text = [
    greeting(mail.name),
    '',
    `${texts.purpose} in ${mail.appName}.`,
    `Your code: ${mail.code}`,
    '',
    `It works once and expires in ${lasts}.`,
    texts.unasked,
  ].join('\n');
  const html = page(
    mail.appName,
    [
      `<p>${escapeHtml(greeting(mail.name))}</p>`,
      `<p>${escapeHtml(texts.purpose)} in ${escapeHtml(mail.appName)}:</p>`,
      `<p style="font-size:28px;font-weight:bold;letter-spacing:6px;font-family:monospace">${escapeHtml(mail.code)}</p>`,
      `<p style="color:#666">It works once and expires in ${escapeHtml(lasts)}. ${escapeHtml(texts.unasked)}</p>`,
    ].join('\n'),
  );
  return { to: mail.to, subject: texts.subject(mail.appName), text, html, links: [] };
}

export function verificationMail(mail: VerificationMail): MailMessage {
  const lasts = duration(mail.ttlSeconds);
  const text = [
    greeting(mail.name),
    '',
    `Confirm your e-mail address for ${mail.appName} by opening this link:`,
    mail.link,
    '',
    `Or enter this code in the app: ${mail.code}`,
    '',
    `The link and the code work once and expire in ${lasts}.`,
    `If you did not sign up for ${mail.appName}, ignore this e-mail.`,
  ].join('\n');
  const html = page(
    mail.appName,
    [
      `<p>${escapeHtml(greeting(mail.name))}</p>`,
      `<p>Confirm your e-mail address for ${escapeHtml(mail.appName)}:</p>`,
      button(mail.link, 'Confirm e-mail address'),
      `<p>Or enter this code in the app:</p>`,
      `<p style="font-size:28px;font-weight:bold;letter-spacing:6px;font-family:monospace">${escapeHtml(mail.code)}</p>`,
      `<p style="color:#666">The link and the code work once and expire in ${escapeHtml(lasts)}. If you did not sign up for ${escapeHtml(mail.appName)}, ignore this e-mail.</p>`,
    ].join('\n'),
  );
  return { to: mail.to, subject: `Confirm your e-mail address for ${mail.appName}`, text, html, links: [mail.link] };
}

export function passwordResetMail(mail: PasswordResetMail): MailMessage {
  const lasts = duration(mail.ttlSeconds);
  const text = [
    greeting(mail.name),
    '',
    `Someone asked to reset the password of your ${mail.appName} account. To choose a new password, open this link:`,
    mail.link,
    '',
    `The link works once and expires in ${lasts}. Choosing a new password signs you out everywhere.`,
    'If you did not ask for this, ignore this e-mail: your password stays as it is.',
  ].join('\n');
  const html = page(
    mail.appName,
    [
      `<p>${escapeHtml(greeting(mail.name))}</p>`,
      `<p>Someone asked to reset the password of your ${escapeHtml(mail.appName)} account.</p>`,
      button(mail.link, 'Choose a new password'),
      `<p style="color:#666">The link works once and expires in ${escapeHtml(lasts)}. Choosing a new password signs you out everywhere. If you did not ask for this, ignore this e-mail: your password stays as it is.</p>`,
    ].join('\n'),
  );
  return { to: mail.to, subject: `Reset your ${mail.appName} password`, text, html, links: [mail.link] };
}

function greeting(name: string | null): string {
  return name ? `Hello ${name},` : 'Hello,';
}

function duration(seconds: number): string {
  if (seconds % 86_400 === 0) return plural(seconds / 86_400, 'day');
  if (seconds % 3600 === 0) return plural(seconds / 3600, 'hour');
  if (seconds % 60 === 0) return plural(seconds / 60, 'minute');
  return plural(seconds, 'second');
}

function plural(count: number, unit: string): string {
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}

function button(link: string, label: string): string {
  return `<p><a href="${escapeHtml(link)}" style="display:inline-block;padding:10px 18px;background:#1a73e8;color:#fff;text-decoration:none;border-radius:4px">${escapeHtml(label)}</a></p>\n<p style="color:#666;font-size:12px">Or paste this address into your browser: ${escapeHtml(link)}</p>`;
}

function page(title: string, body: string): string {
  return `<!doctype html>\n<html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>\n<body style="font-family:sans-serif;line-height:1.5;max-width:560px">\n${body}\n</body></html>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
