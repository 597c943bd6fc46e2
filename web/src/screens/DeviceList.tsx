import { memo, useEffect, useLayoutEffect, useRef, useState } from 'react';
import type { KeyboardEvent } from 'react';
import type { Device, Position } from '../../../src/client/index.ts';
import { relativeTime, t } from '../i18n.ts';
import { StatusDot } from '../ui.tsx';

/** Every row has this height (styles.css `.device-list li`), so the rows in view follow from the scroll offset. */
export const ROW_HEIGHT = 52;
/** Rows rendered beyond each edge of the view, so a fast scroll or the arrow keys find the next row ready. */
const OVERSCAN = 6;

/**
 * The device list, virtualised: only the rows in view (and a few beyond) exist, so with 1 000 devices
 * reporting, a live flush re-renders the dozen rows a person can see, not the thousand. Arrow keys,
 * Home and End move through all of them, scrolling as they go.
 */
export function DeviceList({ devices, positions, selected, onSelect, label }: {
  devices: Device[];
  positions: ReadonlyMap<number, Position>;
  selected: number | undefined;
  onSelect: (id: number) => void;
  label: string;
}) {
  const scroller = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ top: 0, height: ROW_HEIGHT * 12 });
  /** The row the keyboard moved to: focused once it is rendered. */
  const pendingFocus = useRef<number | undefined>(undefined);

  useLayoutEffect(() => {
    const element = scroller.current;
    if (!element) return;
    const measure = () => setView({ top: element.scrollTop, height: element.clientHeight });
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);

  useEffect(() => {
    if (pendingFocus.current === undefined) return;
    scroller.current?.querySelector<HTMLButtonElement>(`[data-index="${pendingFocus.current}"]`)?.focus({ preventScroll: true });
    pendingFocus.current = undefined;
  });

  const first = Math.max(0, Math.floor(view.top / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(devices.length, Math.ceil((view.top + view.height) / ROW_HEIGHT) + OVERSCAN);

  const moveTo = (index: number) => {
    const element = scroller.current;
    if (!element || devices.length === 0) return;
    const target = Math.max(0, Math.min(devices.length - 1, index));
    const rowTop = target * ROW_HEIGHT;
    if (rowTop < element.scrollTop) element.scrollTop = rowTop;
    else if (rowTop + ROW_HEIGHT > element.scrollTop + element.clientHeight) element.scrollTop = rowTop + ROW_HEIGHT - element.clientHeight;
    pendingFocus.current = target;
    setView({ top: element.scrollTop, height: element.clientHeight });
  };
  const onKeyDown = (event: KeyboardEvent) => {
    const current = Number((event.target as HTMLElement).dataset.index);
    if (!Number.isInteger(current)) return;
    const page = Math.max(1, Math.floor(view.height / ROW_HEIGHT) - 1);
    const next = { ArrowDown: current + 1, ArrowUp: current - 1, PageDown: current + page, PageUp: current - page, Home: 0, End: devices.length - 1 }[event.key];
    if (next === undefined) return;
    event.preventDefault();
    moveTo(next);
  };

  return (
    <div
      ref={scroller}
      className="device-scroller"
      style={{ height: devices.length * ROW_HEIGHT }}
      onScroll={(event) => setView({ top: event.currentTarget.scrollTop, height: event.currentTarget.clientHeight })}
    >
      <ul className="device-list" aria-label={label} style={{ height: devices.length * ROW_HEIGHT }} onKeyDown={onKeyDown}>
        {devices.slice(first, last).map((device, offset) => (
          <DeviceRow
            key={device.id}
            index={first + offset}
            count={devices.length}
            device={device}
            position={positions.get(device.id)}
            selected={device.id === selected}
            onSelect={onSelect}
          />
        ))}
      </ul>
    </div>
  );
}

/** A row re-renders only when its device, its position or its selection changes. */
const DeviceRow = memo(function DeviceRow({ index, count, device, position, selected, onSelect }: {
  index: number;
  count: number;
  device: Device;
  position: Position | undefined;
  selected: boolean;
  onSelect: (id: number) => void;
}) {
  return (
    <li style={{ top: index * ROW_HEIGHT }} aria-posinset={index + 1} aria-setsize={count}>
      <button type="button" className="device-row" data-index={index} aria-pressed={selected} onClick={() => onSelect(device.id)}>
        <StatusDot status={device.status} />
        <span className="grow">
          <strong>{device.name}</strong>
          <small>
            {t.status[device.status]} · {position ? relativeTime(position.fixTime ?? device.lastUpdate) : t.map.noPosition}
          </small>
        </span>
      </button>
    </li>
  );
});
