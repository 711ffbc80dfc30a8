// The household page's own steps, over the passkey pages' script (page.js, loaded first: its
// post, assert, say and wire are used here): sign in with any of this site's passkeys (none
// is named: the passkey says whose it is), and sign out. Every path is under the page's own.
"use strict";

const householdPath = location.pathname.replace(/\/+$/, "");

async function signIn() {
  const options = await post(householdPath + "/sign-in/options", {});
  const credential = await assert(options);
  await post(householdPath + "/sign-in", { credential });
  location.assign(householdPath);
}

async function signOut() {
  await post(householdPath + "/sign-out", {});
  location.assign(householdPath);
}

// Approve or Decline on a waiting order: the same hearth-approval/v1 statement the order's
// own approval page signs, shown before the phone asks, then signed by this member's passkey.
async function decideOn(button) {
  const item = button.closest("[data-request]");
  const line = item.querySelector(".decided");
  const controls = item.querySelectorAll("button");
  const path = householdPath + "/decide/" + encodeURIComponent(item.dataset.request);
  const decision = button.dataset.decide;
  for (const other of controls) other.disabled = true;
  line.className = "decided";
  line.textContent = "Waiting for your passkey…";
  try {
    const request = await post(path + "/challenge", { decision });
    item.querySelector(".statement").textContent = request.statement;
    item.querySelector(".signing").hidden = false;
    const credential = await assert(request.options);
    const answer = await post(path, { decision, statement: request.statement, credential });
    line.textContent = answer.message;
    line.className = "decided done";
    item.querySelector(".actions").hidden = true;
  } catch (error) {
    const cancelled = error && error.name === "NotAllowedError";
    line.textContent = cancelled ? "Nothing was done: the passkey was not used. You can try again." : error.message;
    if (!error.final) for (const other of controls) other.disabled = false;
  }
}

for (const button of document.querySelectorAll("button[data-decide]")) {
  button.addEventListener("click", () => decideOn(button));
}

// A guardian's action (invite, approve or revoke a passkey, add or revoke a device key,
// unlink an assistant): the hearth-household-action/v1 statement is shown first, then signed by
// their passkey; what it made (an invite's link and QR code, a device key) is shown once.
async function act(button) {
  const acting = document.getElementById("acting");
  const acted = document.getElementById("acted");
  const shown = document.getElementById("shown");
  const controls = document.querySelectorAll("button[data-act]");
  for (const other of controls) other.disabled = true;
  shown.replaceChildren();
  acted.className = "";
  acted.textContent = "Waiting for your passkey…";
  try {
    const request = await post(householdPath + "/act/challenge",
      { action: button.dataset.act, target: button.dataset.target });
    acting.querySelector(".statement").textContent = request.statement;
    acting.hidden = false;
    const credential = await assert(request.options);
    const done = await post(householdPath + "/act", { statement: request.statement, credential });
    acted.textContent = done.message;
    acted.className = "done";
    show(shown, done);
    for (const other of controls) if (other !== button) other.disabled = false;
  } catch (error) {
    const cancelled = error && error.name === "NotAllowedError";
    acted.textContent = cancelled ? "Nothing was done: the passkey was not used. You can try again." : error.message;
    for (const other of controls) other.disabled = false;
  }
}

// What an action made, built as elements (never as markup from the answer, but the QR code's
// SVG, which is parsed as SVG and adopted).
function show(place, done) {
  if (done.invite_url) {
    const link = document.createElement("p");
    const anchor = document.createElement("a");
    anchor.href = done.invite_url;
    anchor.textContent = done.invite_url;
    link.append("The invite: ", anchor);
    place.append(link);
    if (done.qr_svg) {
      const svg = new DOMParser().parseFromString(done.qr_svg, "image/svg+xml").documentElement;
      if (svg.nodeName === "svg") place.append(document.importNode(svg, true));
    }
  }
  if (done.device_key) {
    const key = document.createElement("pre");
    key.textContent = `${done.device_key_id}\n${done.device_key}`;
    const label = document.createElement("p");
    label.textContent = "The device key (its id, then the key), shown this once:";
    place.append(label, key);
  }
}

for (const button of document.querySelectorAll("button[data-act]")) {
  button.addEventListener("click", () => act(button));
}

// The passkey pages' service worker, registered over this page's own path (it is served with
// Service-Worker-Allowed for it): it shows what is pushed and opens its page, and caches
// nothing, so nothing of the household is kept on the phone.
const workerScript = householdPath.replace(/\/household$/, "") + "/passkeys/sw.js";

function registerWorker() {
  return navigator.serviceWorker.register(workerScript, { scope: householdPath });
}

if ("serviceWorker" in navigator && document.querySelector('main[data-page^="household"]')) {
  registerWorker().catch(() => {});
}

// Notify this phone: a push subscription under Hearth's VAPID key, kept on the signed-in
// passkey; what waits then opens on this page.
async function notifyHere(button) {
  button.disabled = true;
  say("Waiting for this phone…");
  try {
    const registration = await registerWorker();
    const subscription = await registration.pushManager.subscribe({
      userVisibleOnly: true,
      applicationServerKey: fromBase64url(button.dataset.key),
    });
    const answer = await post(householdPath + "/push", subscription.toJSON());
    button.hidden = true;
    say(answer.message, true);
  } catch (error) {
    say(error && error.name === "NotAllowedError" ? "Notifications were not allowed on this phone." : error.message);
    button.disabled = false;
  }
}

const notifyButton = document.getElementById("notify-household");
if (notifyButton) {
  if ("serviceWorker" in navigator && "PushManager" in window) {
    notifyButton.addEventListener("click", () => notifyHere(notifyButton));
  } else {
    notifyButton.hidden = true;
  }
}

wire("sign-in", () => signIn());
wire("sign-out", () => signOut());
