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

wire("sign-in", () => signIn());
wire("sign-out", () => signOut());
