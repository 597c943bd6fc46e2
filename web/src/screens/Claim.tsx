import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import type { FormEvent } from 'react';
import { api } from '../api.ts';
import { t } from '../i18n.ts';
import { Link } from '../router.tsx';
import { ErrorNote, Field, Note, Page } from '../ui.tsx';
import { queryKeys } from '../queryKeys.ts';

/** A claim token as printed (XXXX-XXXX-XXXX) or inside a QR code, which may hold a URL with ?token=. */
export function tokenFromText(text: string): string {
  const trimmed = text.trim();
  try {
    const url = new URL(trimmed);
    const token = url.searchParams.get('token') ?? url.searchParams.get('claim');
    if (token) return token.trim().toUpperCase();
  } catch {
    // Not a URL: the token itself.
  }
  return trimmed.toUpperCase();
}

export default function Claim() {
  const queryClient = useQueryClient();
  const [token, setToken] = useState('');
  const [scanning, setScanning] = useState(false);
  const preview = useMutation({ mutationFn: (value: string) => api.validateClaimToken(value) });
  const claim = useMutation({
    mutationFn: () => api.claimDevice(token),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: queryKeys.devices }),
  });
  const check = (value: string) => {
    claim.reset();
    preview.mutate(value);
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    check(token);
  };
  const found = preview.data?.success ? preview.data : undefined;

  return (
    <Page title={t.claim.title}>
      <p>{t.claim.intro}</p>
      <form onSubmit={submit} className="stack">
        <Field
          label={t.claim.token}
          autoComplete="off"
          autoCapitalize="characters"
          spellCheck={false}
          required
          maxLength={64}
          value={token}
          onChange={(e) => {
            setToken(e.target.value.toUpperCase());
            preview.reset();
          }}
        />
        <div className="row">
          <button type="submit" className="primary" disabled={preview.isPending}>
            {t.claim.check}
          </button>
          <button type="button" onClick={() => setScanning(!scanning)}>
            {scanning ? t.claim.stopScan : t.claim.scan}
          </button>
        </div>
      </form>
      {scanning && (
        <Scanner
          onToken={(value) => {
            setScanning(false);
            setToken(value);
            check(value);
          }}
        />
      )}
      <ErrorNote error={preview.error} />
      {preview.data && !preview.data.success && (
        <div className="note error" role="alert">
          {t.claim.tokenErrors[preview.data.errorCode] ?? preview.data.errorMessage}
        </div>
      )}
      {found && !claim.isSuccess && (
        <section className="card" aria-labelledby="claim-preview">
          <h2 id="claim-preview">{t.claim.preview}</h2>
          <dl className="facts">
            <dt>{t.claim.model}</dt>
            <dd>{found.model}</dd>
            <dt>{t.claim.uniqueId}</dt>
            <dd>{found.uniqueId}</dd>
          </dl>
          <ErrorNote error={claim.error} />
          <button type="button" className="primary" disabled={claim.isPending} onClick={() => claim.mutate()}>
            {t.claim.submit}
          </button>
        </section>
      )}
      {claim.data?.device && (
        <Note kind="success">
          {claim.data.alreadyClaimed ? t.claim.alreadyYours : t.claim.claimed(claim.data.device.name)}{' '}
          <Link to={`/devices/${claim.data.device.id}`}>{t.claim.open}</Link>
        </Note>
      )}
    </Page>
  );
}

/** Reads QR codes from the camera: frames of getUserMedia drawn on a canvas and decoded by jsQR (loaded on demand). */
function Scanner({ onToken }: { onToken: (token: string) => void }) {
  const video = useRef<HTMLVideoElement>(null);
  const [failed, setFailed] = useState(false);
  const found = useRef(onToken);
  found.current = onToken;
  useEffect(() => {
    let stream: MediaStream | undefined;
    let frame = 0;
    let stopped = false;
    const canvas = document.createElement('canvas');
    const context = canvas.getContext('2d', { willReadFrequently: true });
    (async () => {
      const [{ default: jsQR }, media] = await Promise.all([
        import('jsqr'),
        navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' }, audio: false }),
      ]);
      stream = media;
      if (stopped || !video.current || !context) return;
      video.current.srcObject = media;
      await video.current.play();
      const scan = () => {
        if (stopped || !video.current) return;
        const { videoWidth: width, videoHeight: height } = video.current;
        if (width > 0 && height > 0) {
          canvas.width = width;
          canvas.height = height;
          context.drawImage(video.current, 0, 0, width, height);
          const code = jsQR(context.getImageData(0, 0, width, height).data, width, height, { inversionAttempts: 'dontInvert' });
          if (code?.data) return found.current(tokenFromText(code.data));
        }
        frame = requestAnimationFrame(scan);
      };
      scan();
    })().catch(() => setFailed(true));
    return () => {
      stopped = true;
      cancelAnimationFrame(frame);
      for (const track of stream?.getTracks() ?? []) track.stop();
    };
  }, []);
  if (failed) return <Note>{t.claim.noCamera}</Note>;
  return (
    <div className="scanner">
      <video ref={video} muted playsInline aria-label={t.claim.scanning} />
      <p>{t.claim.scanning}</p>
    </div>
  );
}
