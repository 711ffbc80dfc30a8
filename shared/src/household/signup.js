// Sign-up: Hearth makes the household, then the person creates its first guardian's passkey
// through the enrolment page Hearth answers with (the passkey pages' ceremony, page.js,
// loaded first). On the consent page the person then links with Sign in with a passkey; on
// the sign-up page they are told how to link. An operator's sign-up link carries its token in
// the fragment (#invite=…), which the browser never sends: this script posts it.
"use strict";

(function () {
  const form = document.getElementById("signup-form");
  if (!form) return;
  const out = document.getElementById("signup-status");
  const button = form.querySelector("button[type=submit]");
  const tell = (text, done) => {
    out.textContent = text;
    out.className = done ? "done" : "";
  };
  // Hidden until now: without this script no passkey could be made.
  form.hidden = false;
  const invite = new URLSearchParams(location.hash.slice(1)).get("invite");
  // The link pasted into a tab already on this page changes only the fragment: read it anew.
  window.addEventListener("hashchange", () => location.reload());
  if (form.dataset.mode === "invite" && !invite) {
    tell("This page needs the sign-up link whoever runs this Hearth sent you. Open that link instead.");
    button.disabled = true;
    return;
  }
  // The household made by an earlier press whose passkey was not created: pressing again
  // makes the passkey for it rather than another household.
  let made = null;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    try {
      if (!made) {
        tell("Making your household…");
        made = await post(form.dataset.signup, {
          household_name: form.elements.household_name.value,
          member_name: form.elements.member_name.value,
          time_zone: Intl.DateTimeFormat().resolvedOptions().timeZone,
          ...(invite ? { invite } : {}),
        });
        for (const field of form.querySelectorAll("input")) field.readOnly = true;
      }
      tell("Waiting for your passkey…");
      await createPasskey(made.enrolment_url);
      const link = document.getElementById("passkey-link");
      if (link) {
        tell("Your household is ready, and you are its guardian. Now press Sign in with a passkey to link it.", true);
        link.focus();
      } else {
        tell("Your household is ready, and you are its guardian. To link an assistant, start linking in its app and press Sign in with a passkey on Hearth's page. If nothing is linked within a day, the household is deleted.", true);
        const next = document.getElementById("signup-next");
        if (next) next.hidden = false;
      }
    } catch (error) {
      const cancelled = error && error.name === "NotAllowedError";
      tell(cancelled ? "The passkey was not created. Press Create a household to try again." : error.message);
      if (!error.final) button.disabled = false;
    }
  });
})();
