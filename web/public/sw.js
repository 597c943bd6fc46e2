// The app's service worker, served from the root so its scope is the whole app. It keeps the app's
// shell for offline use (the page, its scripts and styles, the icons), shows the Web Push
// notifications the server sends (docs/notifications.md: {title, body, url, data, tag}), tells open
// pages of each one, and opens the device's page when one is clicked.

/** The shell's cache; a new worker fills its own and drops the others. */
const SHELL_CACHE = 'trackstack-shell-v1';
const SHELL_FILES = ['/', '/manifest.webmanifest', '/favicon.svg', '/icons/icon-192.png', '/icons/icon-512.png'];

/** The page and every built asset (each screen's chunk, listed by web/build.ts; hashed, so they never change under a name). */
async function cacheShell() {
  const cache = await caches.open(SHELL_CACHE);
  await cache.addAll(SHELL_FILES);
  const assets = await (await fetch('/shell-assets.json', { cache: 'no-store' })).json();
  await cache.addAll(assets);
}

// A shell that cannot be cached (a server being redeployed) leaves the app without offline use, never without push.
self.addEventListener('install', (event) =>
  event.waitUntil(
    cacheShell()
      .catch((error) => console.warn('The offline shell was not cached:', error))
      .then(() => self.skipWaiting()),
  ),
);
self.addEventListener('activate', (event) =>
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((name) => name !== SHELL_CACHE).map((name) => caches.delete(name))))
      .then(() => self.clients.claim()),
  ),
);

/**
 * Pages come from the network while there is one (index.html is never stored by the browser), and
 * from the cached shell without: the app opens and says it cannot reach the server. Hashed assets
 * come from the cache first and are cached as they are fetched (screens' chunks, MapLibre). The API,
 * the socket and everything else go to the network untouched.
 */
self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (request.mode === 'navigate') {
    event.respondWith(
      fetch(request).then(
        (response) => {
          if (response.ok && url.pathname === '/') void caches.open(SHELL_CACHE).then((cache) => cache.put('/', response.clone()));
          return response;
        },
        () => caches.match('/'),
      ),
    );
    return;
  }
  if (url.pathname.startsWith('/assets/') || SHELL_FILES.includes(url.pathname)) {
    event.respondWith(
      caches.match(request).then(
        (cached) =>
          cached ||
          fetch(request).then((response) => {
            if (response.ok && url.pathname.startsWith('/assets/')) {
              const copy = response.clone();
              void caches.open(SHELL_CACHE).then((cache) => cache.put(request, copy));
            }
            return response;
          }),
      ),
    );
  }
});

/** The app's own address for a notification: the device page, whatever origin the server's link names. */
function appPath(message) {
  const deviceId = message.data && message.data.deviceId;
  return /^\d+$/.test(String(deviceId)) ? `/devices/${deviceId}` : '/';
}

self.addEventListener('push', (event) => {
  let message = {};
  try {
    message = event.data ? event.data.json() : {};
  } catch {
    message = { body: event.data ? event.data.text() : '' };
  }
  const title = typeof message.title === 'string' ? message.title : '';
  const path = appPath(message);
  event.waitUntil(
    Promise.all([
      self.registration.showNotification(title, { body: message.body, tag: message.tag, icon: '/favicon.svg', data: { path } }),
      self.clients.matchAll({ type: 'window' }).then((pages) => {
        for (const page of pages) page.postMessage({ kind: 'push', title, body: message.body, path });
      }),
    ]),
  );
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const path = (event.notification.data && event.notification.data.path) || '/';
  event.waitUntil(
    self.clients.matchAll({ type: 'window' }).then((pages) => {
      const page = pages.find((candidate) => new URL(candidate.url).origin === self.location.origin);
      // The page routes first: focusing can be refused (it needs the click's user activation), routing cannot.
      if (page) {
        page.postMessage({ kind: 'open', path });
        return page.focus().catch(() => page);
      }
      return self.clients.openWindow(path);
    }),
  );
});
