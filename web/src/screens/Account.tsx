import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { FormEvent } from 'react';
import type { User } from '../../../src/client/index.ts';
import { api } from '../api.ts';
import { DISTANCE_UNITS, formatDistance, formatSpeed, SPEED_UNITS, unitsOf } from '../format.ts';
import type { Units } from '../format.ts';
import { t } from '../i18n.ts';
import { navigate } from '../router.tsx';
import { queryKeys } from '../queryKeys.ts';
import { signOut } from '../session.ts';
import { CodeField, ErrorNote, Field, NewPasswordField, Note, Page } from '../ui.tsx';

export default function Account({ user }: { user: User }) {
  return (
    <Page title={t.account.title}>
      <Profile user={user} />
      <UnitChoice user={user} />
      <ChangePassword />
      <TwoFactor user={user} />
      <DeleteAccount />
    </Page>
  );
}

function Profile({ user }: { user: User }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState(user.name ?? '');
  const [phone, setPhone] = useState(user.phone ?? '');
  const save = useMutation({ mutationFn: () => api.updateProfile({ name: name.trim() || null, phone: phone.trim() || null }), onSuccess: (updated) => queryClient.setQueryData(queryKeys.profile, updated) });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  return (
    <section className="card" aria-labelledby="profile">
      <h2 id="profile">{t.account.profile}</h2>
      <form onSubmit={submit} className="stack">
        <Field label={t.fields.email} value={user.email} readOnly />
        <Field label={t.fields.name} autoComplete="name" maxLength={128} value={name} onChange={(e) => setName(e.target.value)} />
        <Field label={t.fields.phone} type="tel" autoComplete="tel" maxLength={64} value={phone} onChange={(e) => setPhone(e.target.value)} />
        <ErrorNote error={save.error} />
        {save.isSuccess && <Note kind="success">{t.saved}</Note>}
        <button type="submit" disabled={save.isPending}>
          {t.save}
        </button>
      </form>
    </section>
  );
}

/** Speeds and distances in km/h or mph or knots, km or miles: saved in the account, so every browser shows the same. */
function UnitChoice({ user }: { user: User }) {
  const queryClient = useQueryClient();
  const [units, setUnits] = useState<Units>(() => unitsOf(user));
  const save = useMutation({
    mutationFn: () => api.updateProfile({ speedUnit: units.speed, distanceUnit: units.distance }),
    onSuccess: (updated) => queryClient.setQueryData(queryKeys.profile, updated),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  const choose = (changes: Partial<Units>) => {
    setUnits({ ...units, ...changes });
    save.reset();
  };
  return (
    <section className="card" aria-labelledby="units">
      <h2 id="units">{t.account.units}</h2>
      <form onSubmit={submit} className="stack">
        <fieldset className="row wrap">
          <legend>{t.account.speedUnit}</legend>
          {SPEED_UNITS.map((unit) => (
            <label key={unit} className="check">
              <input type="radio" name="speed-unit" checked={units.speed === unit} onChange={() => choose({ speed: unit })} />
              {t.account.speedUnits[unit]} <span className="hint">({formatSpeed(SAMPLE_KNOTS, unit)})</span>
            </label>
          ))}
        </fieldset>
        <fieldset className="row wrap">
          <legend>{t.account.distanceUnit}</legend>
          {DISTANCE_UNITS.map((unit) => (
            <label key={unit} className="check">
              <input type="radio" name="distance-unit" checked={units.distance === unit} onChange={() => choose({ distance: unit })} />
              {t.account.distanceUnits[unit]} <span className="hint">({formatDistance(SAMPLE_METRES, unit)})</span>
            </label>
          ))}
        </fieldset>
        <ErrorNote error={save.error} />
        {save.isSuccess && <Note kind="success">{t.saved}</Note>}
        <button type="submit" disabled={save.isPending}>
          {t.account.saveUnits}
        </button>
      </form>
    </section>
  );
}

/** What the unit choices show as examples: 50 km/h and 12.5 km. */
const SAMPLE_KNOTS = 50 / 1.852;
const SAMPLE_METRES = 12_500;

function ChangePassword() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const change = useMutation({ mutationFn: () => api.changePassword(current, next), onSuccess: () => { setCurrent(''); setNext(''); } });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    change.mutate();
  };
  return (
    <section className="card" aria-labelledby="password">
      <h2 id="password">{t.account.password}</h2>
      <form onSubmit={submit} className="stack">
        <Field label={t.fields.currentPassword} type="password" autoComplete="current-password" required value={current} onChange={(e) => setCurrent(e.target.value)} />
        <NewPasswordField label={t.fields.newPassword} value={next} onChange={setNext} />
        <ErrorNote error={change.error} />
        {change.isSuccess && <Note kind="success">{t.account.passwordChanged}</Note>}
        <button type="submit" disabled={change.isPending}>
          {t.account.changePassword}
        </button>
      </form>
    </section>
  );
}

/** The profile computes `twoFactorEnabled` into attributes. */
function twoFactorEnabled(user: User): boolean {
  return user.attributes.twoFactorEnabled === true;
}

function TwoFactor({ user }: { user: User }) {
  const queryClient = useQueryClient();
  const [code, setCode] = useState('');
  const [qr, setQr] = useState<string>();
  const [codes, setCodes] = useState<string[]>();
  const [enabled, setEnabled] = useState(() => twoFactorEnabled(user));
  const setup = useMutation({
    mutationFn: async () => {
      const answer = await api.twoFactorSetup();
      const { default: QRCode } = await import('qrcode');
      setQr(await QRCode.toString(answer.otpauth_url, { type: 'svg', margin: 1 }));
      return answer;
    },
  });
  const verify = useMutation({
    mutationFn: () => api.twoFactorVerify(code),
    onSuccess: (answer) => {
      setCodes(answer.backup_codes);
      setEnabled(true);
      setup.reset();
      setCode('');
      void queryClient.invalidateQueries({ queryKey: queryKeys.profile });
    },
  });
  const regenerate = useMutation({ mutationFn: () => api.twoFactorRegenerate(code || undefined), onSuccess: (answer) => { setCodes(answer.backup_codes); setCode(''); } });
  const disable = useMutation({
    mutationFn: () => api.twoFactorDisable(code),
    onSuccess: () => {
      setEnabled(false);
      setCodes(undefined);
      setCode('');
      void queryClient.invalidateQueries({ queryKey: queryKeys.profile });
    },
  });
  const confirm = (event: FormEvent) => {
    event.preventDefault();
    verify.mutate();
  };
  return (
    <section className="card" aria-labelledby="two-factor">
      <h2 id="two-factor">{t.account.twoFactor}</h2>
      {codes && (
        <div className="note success" role="status">
          <strong>{t.account.backupCodes}</strong>
          <p>{t.account.backupHint}</p>
          <ul className="codes">
            {codes.map((backup) => (
              <li key={backup}>
                <code>{backup}</code>
              </li>
            ))}
          </ul>
        </div>
      )}
      {enabled ? (
        <div className="stack">
          <p>{t.account.twoFactorOn}</p>
          <Field label={t.account.codeToConfirm} autoComplete="one-time-code" value={code} onChange={(e) => setCode(e.target.value.trim())} />
          <ErrorNote error={regenerate.error ?? disable.error} />
          <div className="row wrap">
            <button type="button" disabled={regenerate.isPending} onClick={() => regenerate.mutate()}>
              {t.account.regenerate}
            </button>
            <button type="button" className="danger" disabled={disable.isPending || !code} onClick={() => disable.mutate()}>
              {t.account.disable}
            </button>
          </div>
        </div>
      ) : setup.data && qr ? (
        <form onSubmit={confirm} className="stack">
          <p>{t.account.scanQr}</p>
          <div className="qr" role="img" aria-label={t.account.scanQr} dangerouslySetInnerHTML={{ __html: qr }} />
          <p>
            {t.account.secret}: <code className="secret">{setup.data.secret}</code>
          </p>
          <CodeField value={code} onChange={setCode} />
          <ErrorNote error={verify.error} />
          <button type="submit" className="primary" disabled={verify.isPending}>
            {t.account.confirm}
          </button>
        </form>
      ) : (
        <div className="stack">
          <p>{t.account.twoFactorOff}</p>
          <ErrorNote error={setup.error} />
          <button type="button" className="primary" disabled={setup.isPending} onClick={() => setup.mutate()}>
            {t.account.setup}
          </button>
        </div>
      )}
    </section>
  );
}

function DeleteAccount() {
  const queryClient = useQueryClient();
  const [typed, setTyped] = useState('');
  const remove = useMutation({
    mutationFn: () => api.deleteAccount(),
    onSuccess: () => void signOut(queryClient).finally(() => navigate('/login')),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    remove.mutate();
  };
  return (
    <section className="card danger" aria-labelledby="delete-account">
      <h2 id="delete-account">{t.account.deleteTitle}</h2>
      <p>{t.account.deleteHint}</p>
      <form onSubmit={submit} className="stack">
        <Field label={t.account.deleteConfirm} autoComplete="off" value={typed} onChange={(e) => setTyped(e.target.value)} />
        <ErrorNote error={remove.error} />
        <button type="submit" className="danger" disabled={typed !== t.account.deleteWord || remove.isPending}>
          {t.account.deleteSubmit}
        </button>
      </form>
    </section>
  );
}
