import { useEffect, useSyncExternalStore } from 'react';
import type { AnchorHTMLAttributes, MouseEvent, ReactNode } from 'react';

const listeners = new Set<() => void>();

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  window.addEventListener('popstate', listener);
  return () => {
    listeners.delete(listener);
    window.removeEventListener('popstate', listener);
  };
}

function snapshot(): string {
  return window.location.pathname + window.location.search;
}

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (to === snapshot()) return;
  if (options.replace) window.history.replaceState(null, '', to);
  else window.history.pushState(null, '', to);
  for (const listener of listeners) listener();
}

/**
 * Where `?next=` may send a person after sign-in: a path of this app, its query and fragment kept.
 * Anything naming another origin (`https://…`, `//host`, `/\host`, `javascript:`) or not a URL lands on
 * `/`: history refuses another origin, and the page would go blank.
 */
export function pathInApp(target: string | null): string {
  if (!target) return '/';
  try {
    // Not URL.parse: Safari has it only from 18.
    const url = new URL(target, window.location.origin);
    return url.origin === window.location.origin ? url.pathname + url.search + url.hash : '/';
  } catch {
    return '/';
  }
}

/** The current path and query, re-rendering on navigation. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const current = useSyncExternalStore(subscribe, snapshot);
  const url = new URL(current, window.location.origin);
  return { path: url.pathname, query: url.searchParams };
}

/** Moves focus to the page's heading after navigation, so keyboard and screen-reader users land on the new screen. */
export function useFocusHeading(key: string): void {
  useEffect(() => {
    // An address naming a part of the screen (`/devices/7#device-commands`): the screen moves the focus there.
    if (window.location.hash && document.getElementById(window.location.hash.slice(1))) return;
    const heading = document.querySelector<HTMLElement>('main h1:not([data-placeholder])');
    if (heading) {
      heading.tabIndex = -1;
      heading.focus({ preventScroll: true });
    }
  }, [key]);
}

export function Link({ to, children, ...rest }: { to: string; children: ReactNode } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const onClick = (event: MouseEvent<HTMLAnchorElement>) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return (
    <a href={to} onClick={onClick} {...rest}>
      {children}
    </a>
  );
}
