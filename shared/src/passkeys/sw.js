// Hearth's service worker: shows what a push says (a title, a line, and the page it links to)
// and opens that page when the notification is pressed. Pushes carry no one's words.
"use strict";

self.addEventListener("push", (event) => {
  const message = event.data ? event.data.json() : {};
  event.waitUntil(
    self.registration.showNotification(message.title || "Hearth", {
      body: message.body || "Something waits for you.",
      data: { url: message.url },
    }),
  );
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const url = event.notification.data && event.notification.data.url;
  if (url && new URL(url).origin === self.location.origin) {
    event.waitUntil(self.clients.openWindow(url));
  }
});
