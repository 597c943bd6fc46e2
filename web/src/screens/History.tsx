import { useQuery } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import type { FormEvent } from 'react';
import type { Position } from '../../../src/client/index.ts';
import { api } from '../api.ts';
import { formatNumber, formatSpeed, speedIn, speedSuffix, useUnits } from '../format.ts';
import type { SpeedUnit } from '../format.ts';
import { dateTime, t } from '../i18n.ts';
import type { LngLat } from '../map/geo.ts';
import { FitToPoints } from '../map/layers/FitToPoints.tsx';
import { PointMarkers } from '../map/layers/PointMarkers.tsx';
import { RoutePath } from '../map/layers/RoutePath.tsx';
import { MapView } from '../map/MapView.tsx';
import { Link } from '../router.tsx';
import { ErrorNote, Field, Loading, localDateTimeInput, Page } from '../ui.tsx';
import { queryKeys } from '../queryKeys.ts';

const DAY_MS = 86_400_000;


export default function History({ params }: { params: Record<string, string> }) {
  const id = Number(params.id);
  const device = useQuery({ queryKey: queryKeys.device(id), queryFn: () => api.device(id) });
  const units = useUnits();
  const [from, setFrom] = useState(() => localDateTimeInput(new Date(Date.now() - DAY_MS)));
  const [to, setTo] = useState(() => localDateTimeInput(new Date(Date.now() + 60_000)));
  const [range, setRange] = useState(() => ({ from, to }));
  const history = useQuery({
    queryKey: queryKeys.history(id, range.from, range.to),
    queryFn: () => api.history(id, new Date(range.from), new Date(range.to)),
  });
  const [index, setIndex] = useState(0);
  const [playing, setPlaying] = useState(false);
  const positions = useMemo(() => history.data ?? [], [history.data]);
  const current = positions[Math.min(index, positions.length - 1)];
  const track = useMemo(() => positions.map((position): LngLat => [position.longitude, position.latitude]), [positions]);
  const cursor = useMemo((): LngLat[] => (current ? [[current.longitude, current.latitude]] : []), [current]);

  useEffect(() => setIndex(0), [history.data]);

  useEffect(() => {
    if (!playing) return;
    if (index >= positions.length - 1) {
      setPlaying(false);
      return;
    }
    const timer = setTimeout(() => setIndex(index + 1), 200);
    return () => clearTimeout(timer);
  }, [playing, index, positions.length]);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setRange({ from, to });
  };
  const name = device.data?.name ?? `#${id}`;
  return (
    <Page title={t.history.title(name)} wide>
      <p>
        <Link to={`/devices/${id}`}>{t.device.details}</Link>
      </p>
      <form onSubmit={submit} className="row wrap">
        <Field label={t.history.from} type="datetime-local" required value={from} onChange={(e) => setFrom(e.target.value)} />
        <Field label={t.history.to} type="datetime-local" required value={to} onChange={(e) => setTo(e.target.value)} />
        <button type="submit" className="primary">
          {t.history.show}
        </button>
      </form>
      {history.isPending && <Loading />}
      <ErrorNote error={history.error ?? device.error} onRetry={() => void history.refetch()} />
      {history.isSuccess && positions.length === 0 && <p className="note info">{t.history.empty}</p>}
      <div className="history">
        <MapView label={t.history.title(name)} className="map history-map">
          <RoutePath coordinates={track} />
          <PointMarkers points={cursor} color="#d93025" radius={8} />
          <FitToPoints points={track} />
        </MapView>
        {positions.length > 0 && current && (
          <div className="stack playback">
            <p aria-live="off">
              {t.history.points(positions.length)} · {t.history.at(dateTime(current.fixTime), formatSpeed(current.speed, units.speed))}
            </p>
            <div className="row">
              <button type="button" onClick={() => { if (index >= positions.length - 1) setIndex(0); setPlaying(!playing); }}>
                {playing ? t.history.pause : t.history.play}
              </button>
              <label className="visually-hidden" htmlFor="playback">
                {t.history.slider}
              </label>
              <input
                id="playback"
                className="grow"
                type="range"
                min={0}
                max={positions.length - 1}
                value={index}
                aria-valuetext={dateTime(current.fixTime)}
                onChange={(e) => setIndex(Number(e.target.value))}
              />
            </div>
            <SpeedChart positions={positions} index={index} onPick={setIndex} unit={units.speed} />
          </div>
        )}
      </div>
    </Page>
  );
}

/** Speed over the range in the user's unit, with the playback position marked; clicking picks a moment. */
function SpeedChart({ positions, index, onPick, unit }: { positions: Position[]; index: number; onPick: (index: number) => void; unit: SpeedUnit }) {
  const width = 600;
  const height = 120;
  const speeds = positions.map((position) => speedIn(position.speed, unit));
  const max = Math.max(10, ...speeds);
  const x = (i: number) => (positions.length > 1 ? (i / (positions.length - 1)) * width : width / 2);
  const y = (speed: number) => height - (speed / max) * (height - 10);
  const points = speeds.map((speed, i) => `${x(i).toFixed(1)},${y(speed).toFixed(1)}`).join(' ');
  return (
    <figure className="chart">
      <figcaption>{t.history.speedScale(t.history.speedChart, `${formatNumber(max)} ${speedSuffix(unit)}`)}</figcaption>
      <svg
        viewBox={`0 0 ${width} ${height}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={t.history.speedChart}
        onClick={(event) => {
          const box = event.currentTarget.getBoundingClientRect();
          onPick(Math.round(((event.clientX - box.left) / box.width) * (positions.length - 1)));
        }}
      >
        <polyline points={points} fill="none" stroke="currentColor" strokeWidth="2" vectorEffect="non-scaling-stroke" />
        <line x1={x(index)} x2={x(index)} y1={0} y2={height} stroke="#d93025" strokeWidth="2" vectorEffect="non-scaling-stroke" />
      </svg>
    </figure>
  );
}
