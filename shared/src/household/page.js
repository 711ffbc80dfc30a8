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

wire("sign-in", () => signIn());
wire("sign-out", () => signOut());
