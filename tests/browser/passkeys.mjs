// Passkeys in real headless Chromium with CDP virtual authenticators (ctap2, internal,
// resident keys, user verification): a guardian enrols on a phone-width page and subscribes it
// to Web Push (a loopback receiver decrypts what is pushed, per RFC 8291); the invite used
// twice does not work; a child's later passkey waits; the guardian approves it on a
// desktop-width page; an order proposed without a device is approved by the child, then by the
// guardian, and placed, and another declined; a captured assertion replayed, or sent with the
// statement of another decision or another order, is refused; so is another household's
// passkey, an expired link and a link after an unlink; a copied key whose counter went
// backwards is refused and marked suspect; a revoked passkey approves nothing.
//
// Usage: node tests/browser/passkeys.mjs OUTPUT_DIR   (scripts/test runs it, once per store)
// With HEARTH_TABLE and AWS_ENDPOINT_URL set the server and the admin commands use DynamoDB;
// otherwise the server's SQLite file.

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ROOT, chromium, FLAGS, HEARTH, addPhoneAuthenticator, check, startHearth, startPushReceiver, statusAfter } from "./lib.mjs";

const OUT = resolve(process.argv[2] || join(ROOT, ".test-output", "browser-passkeys"));
mkdirSync(OUT, { recursive: true });

// A loopback push service that decrypts what Hearth pushes, as the phone would.
const { receiver, subscription, pushes } = await startPushReceiver();

const { server, base, dataDir, log } = await startHearth({ HEARTH_PUSH_ALLOW_HTTP_LOOPBACK: "true" });
// However this script ends, the server and the receiver end with it.
process.on("exit", () => {
  server.kill();
  receiver.kill();
});
// The admin command prints links under the server's own address, so it runs with its settings.
const onDynamo = Boolean(process.env.HEARTH_TABLE);
const store = { ...(onDynamo ? {} : { HEARTH_DB: join(dataDir, "hearth.db") }),
  HEARTH_DATA_DIR: dataDir, HEARTH_ADDR: new URL(base).host };
function admin(...args) {
  const output = execFileSync(HEARTH, ["admin", ...args, "--json"], { env: { ...process.env, ...store } });
  return JSON.parse(output.toString());
}

// The demo household's rules (dana and chris are guardians, mia and leo children).
const policy = JSON.parse(readFileSync(join(ROOT, "data", "household.json"), "utf8"));
delete policy.household_id;
delete policy.name;
const policyFile = join(dataDir, "policy.json");
writeFileSync(policyFile, JSON.stringify(policy));
const household = admin("household", "create", "Browser Home", "--policy", policyFile).household_id;

const profile = mkdtempSync(join(tmpdir(), "hearth-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  args: FLAGS,
  headless: true,
});
const errors = [];

/** A page at `width` with its own virtual authenticator: one person's device. */
async function device(width) {
  const page = await context.newPage();
  await page.setViewportSize({ width, height: 844 });
  page.on("pageerror", (error) => errors.push(error.message));
  const { cdp, authenticatorId } = await addPhoneAuthenticator(context, page);
  return { page, cdp, authenticatorId };
}

function passkeys() {
  return admin("passkey", "list", household).passkeys;
}

/** A POST from `page`'s own origin, as its script would send it. */
function postFrom(page, path, body) {
  return page.evaluate(async ([path, body]) => {
    const response = await fetch(path, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
    });
    return { status: response.status, answer: await response.json().catch(() => ({})) };
  }, [path, body]);
}

/** Every decision `page` posts to an approval page, as sent. */
function capturedDecisions(page) {
  const bodies = [];
  page.on("request", (request) => {
    if (request.method() === "POST" && /^\/passkeys\/approve\/[^/]+$/.test(new URL(request.url()).pathname)) {
      bodies.push(request.postDataJSON());
    }
  });
  return bodies;
}

try {
  // A child cannot be first.
  let refused = null;
  try { admin("passkey", "invite", household, "mia"); } catch (error) { refused = error.stdout.toString(); }
  check(refused && refused.includes("guardian"), `a child's invite came first: ${refused}`);

  // Dana enrols on her phone. Headless Chromium reaches no real push service, so her page's
  // PushManager hands out the loopback receiver's subscription.
  const dana = await device(390);
  await dana.page.addInitScript((sub) => {
    PushManager.prototype.subscribe = async function () { return { toJSON: () => sub }; };
  }, subscription);
  const invite = admin("passkey", "invite", household, "dana");
  check(invite.url.startsWith("http://localhost:"), `links use the localhost origin: ${invite.url}`);
  const shown = await dana.page.goto(invite.url);
  check(shown.status() === 200, `enrolment page: ${shown.status()}`);
  check((await dana.page.getByRole("button").count()) === 1, "the page has exactly one button");
  let said = await statusAfter(dana.page, "Create passkey");
  check(said.includes("ready"), `dana's enrolment: ${said}`);
  said = await statusAfter(dana.page, "Notify this phone");
  check(said.includes("will be told"), `dana's notifications: ${said}`);
  await dana.page.screenshot({ path: join(OUT, "enrol-390.png"), fullPage: true });
  const { credentials } = await dana.cdp.send("WebAuthn.getCredentials", { authenticatorId: dana.authenticatorId });
  check(credentials.length === 1 && credentials[0].isResidentCredential, "one resident credential on dana's phone");
  let listed = passkeys();
  check(listed.length === 1 && listed[0].member_id === "dana" && !listed[0].pending, JSON.stringify(listed));

  // The same invite again.
  const again = await dana.page.goto(invite.url);
  check(again.status() === 410, `a used invite answers ${again.status()}`);
  check((await dana.page.textContent("body")).includes("does not work"), "the used invite says so");

  // Mia's passkey waits for a guardian.
  const mia = await device(390);
  await mia.page.goto(admin("passkey", "invite", household, "mia").url);
  said = await statusAfter(mia.page, "Create passkey");
  check(said.includes("guardian approves"), `mia's enrolment: ${said}`);
  listed = passkeys();
  const waiting = listed.find((entry) => entry.member_id === "mia");
  check(waiting.pending && !("approval_url" in waiting), `links are kept only as hashes: ${JSON.stringify(waiting)}`);
  // Dana's phone was told, encrypted, with the page and no one's words.
  const told = pushes();
  check(told.length === 1 && told[0].vapid && told[0].encoding === "aes128gcm", `the push: ${JSON.stringify(told)}`);
  const approvalPage = told[0].payload?.url ?? "";
  check(approvalPage.startsWith("http://localhost:") && approvalPage.includes("/passkeys/confirm/"), `the push links the page: ${JSON.stringify(told[0])}`);
  check(JSON.stringify(Object.keys(told[0].payload).sort()) === JSON.stringify(["body", "title", "url"]), "only a title, a line and the link");

  // Dana approves it at her desk.
  await dana.page.setViewportSize({ width: 1280, height: 800 });
  await dana.page.goto(approvalPage);
  check((await dana.page.textContent("h1")).includes("Approve a new passkey"), "the approval page");
  await dana.page.screenshot({ path: join(OUT, "confirm-1280.png"), fullPage: true });
  said = await statusAfter(dana.page, "Approve");
  check(said.startsWith("Approved"), `dana's approval: ${said}`);
  check(passkeys().every((entry) => !entry.pending), "nothing pending after the approval");

  // An order proposed by a host that signs nothing: Mia approves on her phone, which passes it
  // to a guardian; Dana approves it at her desk, and it is placed. Another, Dana declines.
  const token = admin("token", household).access_token;
  async function propose() {
    const response = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json",
        accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: {
        name: "propose_purchase", arguments: { product_id: "aa-batteries", variant_id: "4-pack", quantity: 1 } } }),
    });
    const result = (await response.json()).result;
    check(result && result.structuredContent?.status === "waiting_for_approval", `proposal: ${JSON.stringify(result)}`);
    return result.structuredContent;
  }
  const order = await propose();
  check(order.approval_url.startsWith("http://localhost:"), `approval link: ${order.approval_url}`);
  check(pushes().some((push) => push.payload?.url === order.approval_url && push.vapid), `the order was pushed to dana's phone: ${JSON.stringify(pushes())}`);
  await mia.page.goto(order.approval_url);
  check((await mia.page.textContent("dl")).includes("PowerCell AA Alkaline Batteries"), "the page shows the order");
  await mia.page.screenshot({ path: join(OUT, "approve-390.png"), fullPage: true });
  said = await statusAfter(mia.page, "Approve");
  check(said.includes("A guardian approves it too"), `mia's approval: ${said}`);
  await dana.page.goto(order.approval_url);
  check((await dana.page.textContent("main")).includes("Mia approved this order"), "the guardian sees who approved");
  said = await statusAfter(dana.page, "Approve");
  check(said.startsWith("Approved. Hearth ordered"), `dana's approval: ${said}`);
  await dana.page.screenshot({ path: join(OUT, "approved-1280.png"), fullPage: true });
  const decided = await dana.page.goto(order.approval_url);
  check(decided.status() === 410, `a decided order's page answers ${decided.status()}`);
  const declined = await propose();
  await dana.page.goto(declined.approval_url);
  said = await statusAfter(dana.page, "Decline");
  check(said.startsWith("Declined"), `dana's decline: ${said}`);
  const entries = admin("ledger", "export", household).entries;
  const decisions = entries.filter((entry) => entry.kind === "passkey_decision");
  check(decisions.length === 3 && decisions.every((entry) => entry.approval?.signature), "three signed decisions in the ledger");

  // What Mia's phone sends, captured as a page script could: replayed, or sent again with the
  // statement of another decision or another order, it signs nothing. The page answers the
  // statement it expects next, so each attempt below carries a statement Hearth would accept
  // with a fresh signature.
  const sent = capturedDecisions(mia.page);
  const waitingOrder = await propose();
  const link = new URL(waitingOrder.approval_url).pathname;
  await mia.page.goto(waitingOrder.approval_url);
  said = await statusAfter(mia.page, "Approve");
  check(said.includes("A guardian approves it too") && sent.length === 1, `mia's approval: ${said}`);
  const captured = sent[0];
  let tried = await postFrom(mia.page, link, captured);
  check(tried.status === 400 && tried.answer.error === "invalid_request", `the same assertion again: ${JSON.stringify(tried)}`);
  const again1 = await postFrom(mia.page, `${link}/challenge`, { decision: "approve" });
  tried = await postFrom(mia.page, link, captured);
  check(tried.status === 403 && tried.answer.message.includes("something else"), `a replay under a new nonce: ${JSON.stringify(tried)}`);
  tried = await postFrom(mia.page, link, { ...captured, statement: again1.answer.statement });
  check(tried.status === 403, `an old assertion under the current statement: ${JSON.stringify(tried)}`);
  const decline = await postFrom(mia.page, `${link}/challenge`, { decision: "decline" });
  check(decline.answer.statement.split("\n")[4] === "decline", `the decline statement: ${JSON.stringify(decline.answer)}`);
  tried = await postFrom(mia.page, link, { ...captured, decision: "decline", statement: decline.answer.statement });
  check(tried.status === 403, `an approval sent as a decline: ${JSON.stringify(tried)}`);
  const otherOrder = await propose();
  const otherLink = new URL(otherOrder.approval_url).pathname;
  await mia.page.goto(otherOrder.approval_url);
  const other = await postFrom(mia.page, `${otherLink}/challenge`, { decision: "approve" });
  check(other.answer.statement.split("\n")[2] === otherOrder.request_id, `the other order's statement: ${JSON.stringify(other.answer)}`);
  tried = await postFrom(mia.page, otherLink, { ...captured, statement: other.answer.statement });
  check(tried.status === 403, `an approval for another order: ${JSON.stringify(tried)}`);
  let ledger = admin("ledger", "export", household).entries.filter((entry) => entry.kind === "passkey_decision");
  check(ledger.length === 4, `only mia's one approval was recorded: ${ledger.length} decisions`);

  // A guardian of another household, on a page whose script was changed to let any passkey
  // answer: the signature is good, the passkey is not this household's.
  const neighbour = admin("household", "create", "Next Door", "--policy", policyFile).household_id;
  const stranger = await device(390);
  await stranger.page.goto(admin("passkey", "invite", neighbour, "dana").url);
  said = await statusAfter(stranger.page, "Create passkey");
  check(said.includes("ready"), `the neighbour's enrolment: ${said}`);
  await stranger.page.route("**/challenge", async (route) => {
    const response = await route.fetch();
    const json = await response.json();
    json.options.allowCredentials = [];
    await route.fulfill({ response, json });
  });
  await stranger.page.goto(waitingOrder.approval_url);
  said = await statusAfter(stranger.page, "Approve");
  check(said.includes("not one of this household's"), `another household's passkey: ${said}`);

  // Past its 30 minutes a link opens nothing. The store's clock cannot be wound forward, so
  // the test moves the links' end into the past where it is kept.
  const storeEnv = { ...process.env, ...store };
  execFileSync(join(ROOT, ".venv", "bin", "python"), [join(ROOT, "tests", "browser", "expire_approval_links.py"), household],
    { env: storeEnv });
  const expired = await dana.page.goto(otherOrder.approval_url);
  // Every link that does not work says the same, whatever the reason.
  check(expired.status() === 410 && (await dana.page.textContent("body")).includes("its time ran out, or it was never right"),
    `an expired link answers ${expired.status()}`);
  tried = await postFrom(dana.page, `${otherLink}/challenge`, { decision: "approve" });
  check(tried.status === 410, `an expired link's challenge: ${JSON.stringify(tried)}`);

  // A copy of dana's key with an older counter answers on another device: refused, suspect.
  const leo = await device(390);
  await leo.page.goto(admin("passkey", "invite", household, "leo").url);
  said = await statusAfter(leo.page, "Create passkey");
  check(said.includes("guardian approves"), `leo's enrolment: ${said}`);
  const leoWaiting = passkeys().find((entry) => entry.member_id === "leo");
  // The operator makes a new link to its page (the one pushed to the guardians is kept only as a hash).
  leoWaiting.approval_url = admin("passkey", "approval-link", household, leoWaiting.credential_id).url;
  check(leoWaiting.approval_url.includes("/passkeys/confirm/"), `a new approval link: ${leoWaiting.approval_url}`);
  const copy = await device(1280);
  const danaKey = (await dana.cdp.send("WebAuthn.getCredentials", { authenticatorId: dana.authenticatorId })).credentials[0];
  await copy.cdp.send("WebAuthn.addCredential", {
    authenticatorId: copy.authenticatorId,
    credential: { ...danaKey, signCount: 0 },
  });
  await copy.page.goto(leoWaiting.approval_url);
  said = await statusAfter(copy.page, "Approve");
  check(said.includes("copied"), `a copied key: ${said}`);
  const danaNow = passkeys().find((entry) => entry.member_id === "dana");
  check(danaNow.suspect_at, `dana's passkey is suspect: ${JSON.stringify(danaNow)}`);

  // Revoked, it approves nothing either: no guardian can sign, and the page says so.
  admin("passkey", "revoke", household, danaNow.credential_id);
  await dana.page.goto(leoWaiting.approval_url);
  said = await statusAfter(dana.page, "Approve");
  check(said.includes("No guardian"), `after the revocation: ${said}`);
  check(passkeys().find((entry) => entry.member_id === "leo").pending, "leo's passkey still waits");

  // An unlink closes every link at once: the order page and the pending passkey's page.
  const lastOrder = await propose();
  check((await dana.page.goto(lastOrder.approval_url)).status() === 200, "the last order's page opens");
  admin("unlink", household);
  const unlinked = await dana.page.goto(lastOrder.approval_url);
  check(unlinked.status() === 410, `an order's link after an unlink answers ${unlinked.status()}`);
  const unlinkedPasskey = await dana.page.goto(leoWaiting.approval_url);
  check(unlinkedPasskey.status() === 410, `a passkey's approval page after an unlink answers ${unlinkedPasskey.status()}`);

  check(errors.length === 0, `page errors: ${errors.join("; ")}`);
  check(!log().includes(invite.url.split("/").pop()), "the invite token reached the log");
  console.log(`passkeys on ${onDynamo ? "DynamoDB" : "SQLite"} (390px and 1280px): enrol, Web Push decrypted by a loopback receiver, used invite, later enrolment approved, an order approved by a child then a guardian, a decline, replayed and re-aimed assertions, another household's passkey, an expired link, copied key, revoked key, links after an unlink passed`);
} finally {
  await context.close();
  server.kill();
  receiver.kill();
}
