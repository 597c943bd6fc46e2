// The app's service worker, served from the root so its scope is the whole app. It shows the Web Push
// notifications the server sends (docs/notifications.md: {title, body, url, data, tag}), tells open
// pages of each one, and opens the device's page when one is clicked.

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

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
