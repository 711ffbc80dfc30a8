// Hearth's passkey pages: enrol a passkey, or sign a statement with one. The server renders
// the page; this script only runs the WebAuthn ceremony and posts its answer back to the
// page's own URL. Byte strings travel as base64url, as WebAuthn's JSON forms write them.
"use strict";

const main = document.querySelector("main[data-page]");
const status = document.getElementById("status");

function fromBase64url(text) {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(base64 + "===".slice((base64.length + 3) % 4));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0)).buffer;
}

function toBase64url(buffer) {
  let binary = "";
  for (const byte of new Uint8Array(buffer)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function say(text, done) {
  if (!status) return;
  status.textContent = text;
  status.className = done ? "done" : "";
}

// A page with a session names its CSRF token in a meta tag; every POST carries it.
const csrf = document.querySelector('meta[name="hearth-csrf"]')?.content;

async function post(path, body) {
  const headers = { "content-type": "application/json" };
  if (csrf) headers["x-hearth-csrf"] = csrf;
  const response = await fetch(path, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(answer.message || "Hearth could not take that. Try again.");
    error.final = response.status === 410 || response.status === 404;
    throw error;
  }
  return answer;
}

function descriptors(list) {
  return (list || []).map((item) => ({ ...item, id: fromBase64url(item.id) }));
}

// Makes a passkey through the enrolment page at `here` (its options, then the new
// credential) and answers what the page answered. Sign-up runs it for a new household's
// first guardian.
async function createPasskey(here) {
  const options = await post(here + "/options", {});
  const publicKey = {
    ...options,
    challenge: fromBase64url(options.challenge),
    user: { ...options.user, id: fromBase64url(options.user.id) },
    excludeCredentials: descriptors(options.excludeCredentials),
  };
  const credential = await navigator.credentials.create({ publicKey });
  return post(here, {
    credential: {
      id: credential.id,
      rawId: toBase64url(credential.rawId),
      type: credential.type,
      response: {
        clientDataJSON: toBase64url(credential.response.clientDataJSON),
        attestationObject: toBase64url(credential.response.attestationObject),
      },
    },
  });
}

async function enrol(button) {
  const answer = await createPasskey(location.pathname);
  button.disabled = true;
  say(answer.message, true);
  const notify = document.getElementById("notify");
  if (notify && answer.push_token && "serviceWorker" in navigator && "PushManager" in window) {
    notify.dataset.token = answer.push_token;
    notify.hidden = false;
    notify.disabled = false;
  }
}

// Web Push: a service worker from Hearth's own origin, a subscription under Hearth's VAPID key,
// posted with the push token the enrolment answered. What is pushed is a link, never words.
async function subscribe(button) {
  const registration = await navigator.serviceWorker.register("../sw.js", { scope: "../" });
  await navigator.serviceWorker.ready;
  const subscription = await registration.pushManager.subscribe({
    userVisibleOnly: true,
    applicationServerKey: fromBase64url(button.dataset.key),
  });
  const answer = await post("../push/" + button.dataset.token, subscription.toJSON());
  button.hidden = true;
  say(answer.message, true);
}

// An assertion over request options as the server gives them (byte strings base64url), as
// JSON for the server. The household page's script asks its passkeys through this too.
async function assert(options) {
  const publicKey = {
    ...options,
    challenge: fromBase64url(options.challenge),
    allowCredentials: descriptors(options.allowCredentials),
  };
  const credential = await navigator.credentials.get({ publicKey });
  return {
    id: credential.id,
    rawId: toBase64url(credential.rawId),
    type: credential.type,
    response: {
      clientDataJSON: toBase64url(credential.response.clientDataJSON),
      authenticatorData: toBase64url(credential.response.authenticatorData),
      signature: toBase64url(credential.response.signature),
      userHandle: credential.response.userHandle
        ? toBase64url(credential.response.userHandle)
        : null,
    },
  };
}

async function sign(button, decision) {
  const here = location.pathname;
  const request = await post(here + "/challenge", { decision });
  const answer = await post(here, {
    decision,
    statement: request.statement,
    credential: await assert(request.options),
  });
  for (const other of document.querySelectorAll("button")) other.disabled = true;
  say(answer.message, true);
}

function wire(id, run) {
  const button = document.getElementById(id);
  if (!button) return;
  button.addEventListener("click", async () => {
    for (const other of document.querySelectorAll("button")) other.disabled = true;
    say("Waiting for your passkey…");
    try {
      await run(button);
    } catch (error) {
      const cancelled = error && error.name === "NotAllowedError";
      say(cancelled ? "Nothing was done: the passkey was not used. You can try again." : error.message);
      if (!error.final) for (const other of document.querySelectorAll("button")) other.disabled = false;
    }
  });
}

if (main) {
  wire("create", (button) => enrol(button));
  wire("notify", (button) => subscribe(button));
  wire("approve", (button) => sign(button, "approve"));
  wire("decline", (button) => sign(button, "decline"));
}
