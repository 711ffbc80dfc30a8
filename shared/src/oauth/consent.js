// The consent page's second way to link: a guardian's passkey instead of a link code. Hearth
// makes a challenge bound to this request's client, redirect URI and PKCE challenge; the
// passkey signs it (the passkey pages' ceremony, page.js, loaded first); the answer goes back
// with this page's own form, CSRF token and all, and Hearth then sends the browser on to the
// app as it does for a link code.
"use strict";

(function () {
  const form = document.getElementById("passkey-form");
  if (!form) return;
  wire("passkey-link", async () => {
    const fields = new URLSearchParams(new FormData(form));
    fields.delete("passkey");
    fields.delete("decision");
    const answer = await fetch(form.dataset.options, { method: "POST", body: fields });
    const options = await answer.json().catch(() => ({}));
    if (!answer.ok) throw new Error(options.message || "Hearth could not ask for a passkey. Try again.");
    form.elements.passkey.value = JSON.stringify(await assert(options));
    say("Linking…");
    form.submit();
  });
})();
