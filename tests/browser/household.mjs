// The household's page in real headless Chromium with CDP virtual authenticators: a guardian
// enrols, then signs in at /household with "Sign in with a passkey" (no name typed) on a
// phone-width page; the session cookie is HttpOnly and SameSite=Strict; Today shows the order
// waiting and the newest decisions, Why finds a decision by its words and shows its reason as
// text, Orders and Waiting list the order; every view passes axe-core (WCAG 2.2 AA, no serious
// or critical violation) at 390 px and Today at 1280 px too; the menu and Sign out are reached
// by keyboard; the waiting order is approved inline, its hearth-approval/v1 statement shown
// first and then kept on Orders; a guardian invites Mia from Members (the
// hearth-household-action/v1 statement shown, then a link and a QR code); Sign out ends the
// session on the server; a child's pending passkey is told to
// wait for a guardian; the page installs (manifest, icon, the service worker over /household,
// nothing cached) and a push about a waiting order opens it there. Screenshots at 390 px are
// the manual's.
//
// Usage: node tests/browser/household.mjs OUTPUT_DIR   (scripts/test runs it)

import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ROOT, chromium, FLAGS, accessible, addPhoneAuthenticator, check, householdOn, startHearth, startPushReceiver, statusAfter } from "./lib.mjs";

const OUT = resolve(process.argv[2] || join(ROOT, ".test-output", "browser-household"));
mkdirSync(OUT, { recursive: true });

// A loopback push service that decrypts what Hearth pushes, as the phone would.
const { receiver, subscription, pushes } = await startPushReceiver();

const { server, base, dataDir, log } = await startHearth({ HEARTH_PUSH_ALLOW_HTTP_LOOPBACK: "true" });
process.on("exit", () => {
  server.kill();
  receiver.kill();
});
const { id: household, admin, tool } = householdOn(base, dataDir, {}, "The Parks");

const profile = mkdtempSync(join(tmpdir(), "hearth-chromium-"));
const context = await chromium.launchPersistentContext(profile, { executablePath: "/usr/bin/chromium", args: FLAGS, headless: true });
const errors = [];
async function device(width) {
  const page = await context.newPage();
  await page.setViewportSize({ width, height: 844 });
  page.on("pageerror", (error) => errors.push(error.message));
  await addPhoneAuthenticator(context, page);
  return page;
}


try {
  const dana = await device(390);
  // Headless Chromium reaches no real push service: the phone's PushManager hands out the
  // loopback receiver's subscription.
  await dana.addInitScript((sub) => {
    PushManager.prototype.subscribe = async function () { return { toJSON: () => sub }; };
  }, subscription);
  const invite = admin("passkey", "invite", household, "dana");
  const origin = new URL(invite.url).origin;
  await dana.goto(invite.url);
  let said = await statusAfter(dana, "Create passkey");
  check(said.includes("ready"), `dana's enrolment: ${said}`);

  // Something to show: an order from a host that signs nothing, and two decisions.
  const order = await tool("propose_purchase", { product_id: "aa-batteries", variant_id: "4-pack", quantity: 1 });
  check(order.status === "waiting_for_approval", JSON.stringify(order));
  await tool("record_decision", { action: "heating.lower", reason: "Nobody home until six <b>tonight</b>", approver: "dana", inputs: {} });
  await tool("record_decision", { action: "lights.off", reason: "Everyone said good night", approver: "chris", inputs: {} });

  await dana.goto(`${origin}/household`);
  check((await dana.textContent("h1")).includes("Your household"), "the sign-in page");
  await accessible(dana, "sign-in page");
  await dana.screenshot({ path: join(OUT, "household-sign-in-390.png"), fullPage: true });
  await Promise.all([
    dana.waitForURL(`${origin}/household`, { waitUntil: "load" }),
    dana.getByRole("button", { name: "Sign in with a passkey", exact: true }).click(),
  ]);
  await dana.waitForSelector("text=Sign out");
  const cookie = (await context.cookies(origin)).find((entry) => entry.name === "hearth_session");
  check(cookie && cookie.httpOnly && cookie.sameSite === "Strict" && cookie.path === "/", `the cookie: ${JSON.stringify(cookie)}`);
  check(!(await dana.evaluate(() => document.cookie)).includes("hearth_session"), "scripts cannot read the session");
  const today = await dana.textContent("main");
  check(today.includes("PowerCell AA Alkaline Batteries") && today.includes("lights.off"), `Today: ${today}`);
  await accessible(dana, "Today at 390 px");
  await dana.screenshot({ path: join(OUT, "household-today-390.png"), fullPage: true });

  // Installable: Chromium finds nothing missing (manifest, icon, a service worker over the
  // page), the worker controls the page once registered, and nothing is cached.
  const cdp = await context.newCDPSession(dana);
  await dana.reload();
  await dana.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: 15000 });
  const { installabilityErrors } = await cdp.send("Page.getInstallabilityErrors");
  check(installabilityErrors.length === 0, `installability: ${JSON.stringify(installabilityErrors)}`);
  const worker = await dana.evaluate(async () => ({
    script: navigator.serviceWorker.controller.scriptURL, caches: await caches.keys(),
  }));
  check(worker.script.endsWith("/passkeys/sw.js") && worker.caches.length === 0, `the worker: ${JSON.stringify(worker)}`);
  // Notify this phone, then an order waits: the push opens this page on it.
  said = await statusAfter(dana, "Notify this phone");
  check(said.includes("will be told"), `notifications: ${said}`);
  const towels = await tool("propose_purchase", { product_id: "paper-towels", variant_id: "6-rolls", quantity: 1 });
  const opened = pushes().find((push) => push.payload?.url?.includes("/household"));
  check(opened && opened.payload.url === `${origin}/household?view=waiting#request-${towels.request_id}`,
    `the push opens the household page: ${JSON.stringify(pushes())}`);

  // Keyboard: from the top, Tab reaches every menu link and Sign out.
  await dana.keyboard.press("Tab");
  const reached = [];
  for (let i = 0; i < 20; i++) {
    reached.push(await dana.evaluate(() => document.activeElement?.textContent?.trim()));
    await dana.keyboard.press("Tab");
  }
  for (const name of ["Today", "Why", "Orders", "Waiting", "Members", "Devices", "Assistants", "Rules", "Sign out"]) {
    check(reached.includes(name), `${name} is not reached by keyboard: ${reached.join(", ")}`);
  }

  await dana.getByRole("link", { name: "Why", exact: true }).click();
  await dana.fill("#q", "nobody home");
  await dana.keyboard.press("Enter");
  await dana.waitForURL(/view=why&q=nobody/);
  const why = await dana.textContent("main");
  check(why.includes("heating.lower") && !why.includes("lights.off"), `the search: ${why}`);
  check(why.includes("<b>tonight</b>") && (await dana.locator("main b").count()) === 0, "a reason is shown as text, not markup");
  await accessible(dana, "Why");
  await dana.screenshot({ path: join(OUT, "household-why-390.png"), fullPage: true });

  for (const [view, shows] of [["Orders", "PowerCell"], ["Waiting", "waiting for approval on a phone"],
    ["Members", "Dana"], ["Devices", "device keys"], ["Assistants", "linked"], ["Rules", "Weekly budget"]]) {
    await dana.getByRole("link", { name: view, exact: true }).click();
    await dana.waitForURL(new RegExp(`view=${view.toLowerCase()}`));
    check((await dana.textContent("main")).includes(shows), `${view}: ${await dana.textContent("main")}`);
    await accessible(dana, view);
    if (view === "Waiting") await dana.screenshot({ path: join(OUT, "household-waiting-390.png"), fullPage: true });
  }
  // Approve the waiting order inline: the statement is shown, then the passkey signs it.
  await dana.getByRole("link", { name: "Waiting", exact: true }).click();
  await dana.getByRole("button", { name: "Approve PowerCell AA Alkaline Batteries", exact: true }).click();
  await dana.waitForFunction(() => {
    const text = document.querySelector(".decided")?.textContent || "";
    return text && !text.startsWith("Waiting");
  }, null, { timeout: 15000 });
  said = await dana.textContent(".decided");
  check(said.startsWith("Approved. Hearth ordered"), `the inline approval: ${said}`);
  const signed = await dana.textContent(".statement");
  check(signed.startsWith("hearth-approval/v1\n" + household + "\n" + order.request_id + "\n"), `the statement shown: ${signed}`);
  await accessible(dana, "Waiting, decided");
  await dana.screenshot({ path: join(OUT, "household-approved-390.png"), fullPage: true });
  await dana.getByRole("link", { name: "Orders", exact: true }).click();
  check((await dana.textContent("main")).includes(signed.trim()), "Orders shows the signed statement");

  // A guardian's action: an invite for Mia from Members. The statement is shown, then the
  // passkey signs it, then the link and its QR code.
  await dana.getByRole("link", { name: "Members", exact: true }).click();
  await dana.getByRole("button", { name: "Invite Mia to make a passkey", exact: true }).click();
  await dana.waitForFunction(() => {
    const text = document.getElementById("acted")?.textContent || "";
    return text && !text.startsWith("Waiting");
  }, null, { timeout: 15000 });
  said = await dana.textContent("#acted");
  check(said.startsWith("Invited"), `the invite: ${said}`);
  const inviteStatement = await dana.textContent("#acting .statement");
  check(inviteStatement.startsWith(`hearth-household-action/v1\ninvite-member\n${household}\nmia\n`), `the statement shown: ${inviteStatement}`);
  check((await dana.locator("#shown svg[role=img]").count()) === 1, "a QR code is shown");
  const miaInvite = await dana.getAttribute("#shown a", "href");
  check(miaInvite.startsWith(`${origin}/passkeys/enrol/`), `the invite link: ${miaInvite}`);
  await accessible(dana, "Members, an invite shown");
  await dana.screenshot({ path: join(OUT, "household-invite-390.png"), fullPage: true });

  await dana.setViewportSize({ width: 1280, height: 800 });
  await dana.getByRole("link", { name: "Today", exact: true }).click();
  await accessible(dana, "Today at 1280 px");
  await dana.screenshot({ path: join(OUT, "household-today-1280.png"), fullPage: true });

  // Sign out ends the session on the server: the same cookie, sent again, opens nothing.
  await Promise.all([
    dana.waitForURL(`${origin}/household`, { waitUntil: "load" }),
    dana.getByRole("button", { name: "Sign out", exact: true }).click(),
  ]);
  await dana.waitForSelector("text=Sign in with a passkey");
  const replayed = await fetch(`${origin}/household`, { headers: { cookie: `hearth_session=${cookie.value}` } });
  const replayedText = await replayed.text();
  check(replayedText.includes("Sign in with a passkey") && replayedText.includes("session ended"), "the old cookie after sign-out");

  // A child's passkey waits for a guardian, and says so at sign-in.
  const mia = await device(390);
  await mia.goto(miaInvite);
  said = await statusAfter(mia, "Create passkey");
  check(said.includes("guardian approves"), `mia's enrolment: ${said}`);
  await mia.goto(`${origin}/household`);
  said = await statusAfter(mia, "Sign in with a passkey");
  check(said.includes("waits for a guardian's approval"), `mia's sign-in: ${said}`);

  check(errors.length === 0, `page errors: ${errors.join("; ")}`);
  check(!log().includes(cookie.value), "the session id reached the log");
  console.log("household page (390px and 1280px): sign-in with a discoverable passkey, HttpOnly SameSite=Strict cookie, Today, Why search, Orders, Waiting, Members, Devices, Assistants, Rules, axe-core on every view, keyboard reach, sign-out on the server, a pending passkey refused passed");
} finally {
  await context.close();
  server.kill();
  receiver.kill();
}
