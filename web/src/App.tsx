import { useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useEffect, useRef, useState } from 'react';
import type { ComponentType, LazyExoticComponent } from 'react';
import type { User } from '../../src/client/index.ts';
import { t } from './i18n.ts';
import { live } from './live.ts';
import { listenToServiceWorker } from './push.ts';
import { Link, navigate, pathInApp, useFocusHeading, useLocation } from './router.tsx';
import { signOut, useSession } from './session.ts';
import { ErrorNote, LoadingPage, Page } from './ui.tsx';
import { queryKeys } from './queryKeys.ts';
import { ScreenBoundary } from './ScreenBoundary.tsx';

type Screen = LazyExoticComponent<ComponentType<{ params: Record<string, string>; user: User }>>;

const SignIn = lazy(() => import('./screens/SignIn.tsx'));
const TwoFactorLogin = lazy(() => import('./screens/TwoFactorLogin.tsx'));
const Register = lazy(() => import('./screens/Register.tsx'));
const VerifyEmail = lazy(() => import('./screens/VerifyEmail.tsx'));
const ResetPassword = lazy(() => import('./screens/ResetPassword.tsx'));

/** Screens of a signed-in user, by path pattern. */
const PRIVATE_ROUTES: [RegExp, Screen][] = [
  [/^\/$/, lazy(() => import('./screens/MapScreen.tsx'))],
  [/^\/claim$/, lazy(() => import('./screens/Claim.tsx'))],
  [/^\/devices\/(?<id>\d+)$/, lazy(() => import('./screens/DevicePage.tsx'))],
  [/^\/devices\/(?<id>\d+)\/history$/, lazy(() => import('./screens/History.tsx'))],
  [/^\/geofences$/, lazy(() => import('./screens/Geofences.tsx'))],
  [/^\/events$/, lazy(() => import('./screens/Events.tsx'))],
  [/^\/account$/, lazy(() => import('./screens/Account.tsx'))],
  [/^\/notifications$/, lazy(() => import('./screens/Notifications.tsx'))],
  [/^\/plan$/, lazy(() => import('./screens/PlanScreen.tsx'))],
  [/^\/admin$/, lazy(() => import('./screens/Admin.tsx'))],
];

const PUBLIC_PATHS = new Set(['/login', '/login/2fa', '/register', '/verify-email', '/reset-password']);

export function App() {
  const { path, query } = useLocation();
  const session = useSession();
  const queryClient = useQueryClient();
  const user = session.data;

  // Social sign-in lands on WEB_URL?openid=success&access_token=…: the cookies are set; the token leaves the address bar.
  useEffect(() => {
    if (query.has('openid') || query.has('access_token')) {
      navigate(path, { replace: true });
      void queryClient.invalidateQueries({ queryKey: queryKeys.profile });
    }
  }, [path, query, queryClient]);

  useEffect(() => {
    if (user) live.start(queryClient);
  }, [user, queryClient]);

  useEffect(listenToServiceWorker, []);

  useEffect(() => {
    if (user && (path === '/login' || path === '/register' || path === '/login/2fa')) navigate(pathInApp(query.get('next')), { replace: true });
  }, [user, path, query]);

  useFocusHeading(path);

  let content;
  if (session.isPending) content = <LoadingPage />;
  else if (session.isError) {
    content = (
      <Page title={t.unavailable}>
        <ErrorNote error={session.error} onRetry={() => void session.refetch()} />
      </Page>
    );
  }
  else if (PUBLIC_PATHS.has(path) || !user) content = <PublicScreen path={path} signedIn={Boolean(user)} />;
  else content = <PrivateScreen path={path} user={user} />;

  return (
    <>
      <a className="skip" href="#main">
        {t.skipToContent}
      </a>
      <header className="top">
        <Link to="/" className="brand">
          <img src="/favicon.svg" alt="" width="24" height="24" />
          {t.appName}
        </Link>
        {user && <MainNav path={path} administrator={user.administrator} onSignOut={() => void signOut(queryClient).then(() => navigate('/login'))} />}
      </header>
      <main id="main">
        <ScreenBoundary resetKey={path} onRetry={() => queryClient.removeQueries({ type: 'inactive' })}>
          <Suspense fallback={<LoadingPage />}>{content}</Suspense>
        </ScreenBoundary>
      </main>
    </>
  );
}

/**
 * The navigation: a row of links on a wide screen; below 720 px a "Menu" button that opens them as a
 * list (styles.css), so the top bar stays one line and the map starts under it. Going anywhere closes it.
 */
function MainNav({ path, administrator, onSignOut }: { path: string; administrator: boolean; onSignOut: () => void }) {
  const [open, setOpen] = useState(false);
  const menuButton = useRef<HTMLButtonElement>(null);
  const [openedAt, setOpenedAt] = useState(path);
  if (open && openedAt !== path) {
    setOpen(false);
    setOpenedAt(path);
  }
  // Escape closes the open menu wherever the focus is, and the focus returns to the button.
  useEffect(() => {
    if (!open) return;
    const onKeyDown = (event: KeyboardEvent) => {
      if (event.key !== 'Escape') return;
      setOpen(false);
      menuButton.current?.focus();
    };
    window.addEventListener('keydown', onKeyDown);
    return () => window.removeEventListener('keydown', onKeyDown);
  }, [open]);
  const toggle = () => {
    setOpenedAt(path);
    setOpen(!open);
  };
  return (
    <nav aria-label={t.nav.label} className="main-nav" data-open={open}>
      <button ref={menuButton} type="button" className="menu-button" aria-expanded={open} aria-controls="nav-links" onClick={toggle}>
        <span aria-hidden="true" className="menu-icon" />
        {t.nav.menu}
      </button>
      <div id="nav-links" className="nav-links">
        <NavLink to="/" path={path} label={t.nav.map} />
        <NavLink to="/claim" path={path} label={t.nav.claim} />
        <NavLink to="/geofences" path={path} label={t.nav.geofences} />
        <NavLink to="/events" path={path} label={t.nav.events} />
        <NavLink to="/notifications" path={path} label={t.nav.notifications} />
        <NavLink to="/account" path={path} label={t.nav.account} />
        <NavLink to="/plan" path={path} label={t.nav.plan} />
        {administrator && <NavLink to="/admin" path={path} label={t.nav.admin} />}
        <button type="button" className="link" onClick={onSignOut}>
          {t.nav.signOut}
        </button>
      </div>
    </nav>
  );
}

function NavLink({ to, path, label }: { to: string; path: string; label: string }) {
  const current = to === '/' ? path === '/' || path.startsWith('/devices') : path.startsWith(to);
  return (
    <Link to={to} aria-current={current ? 'page' : undefined}>
      {label}
    </Link>
  );
}

function PublicScreen({ path, signedIn }: { path: string; signedIn: boolean }) {
  switch (path) {
    case '/register':
      return <Register />;
    case '/verify-email':
      return <VerifyEmail />;
    case '/reset-password':
      return <ResetPassword />;
    case '/login/2fa':
      return <TwoFactorLogin />;
    default:
      return signedIn ? <LoadingPage /> : <SignIn />;
  }
}

function PrivateScreen({ path, user }: { path: string; user: User }) {
  for (const [pattern, Screen] of PRIVATE_ROUTES) {
    const match = pattern.exec(path);
    if (match) return <Screen params={match.groups ?? {}} user={user} />;
  }
  return (
    <Page title={t.notFound.title}>
      <p>{t.notFound.body}</p>
      <Link to="/">{t.notFound.home}</Link>
    </Page>
  );
}
