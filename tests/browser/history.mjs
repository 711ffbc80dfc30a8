// The household page checks its history on the phone, in real headless Chromium: on the first
// visit it pins the log keys, the witnesses and each log's checkpoint in the browser's storage
// and says what it checked; later visits prove the logs extend what it pinned. Then the store
// is tampered with, as someone holding the database alone could:
//
// - rolled back to an older signed state: the server cannot tell, the phone can, and the
//   history is replaced by "This history cannot be trusted", naming how the log shrank;
// - a stored record edited: Hearth's own check refuses it, and the page says the same words;
// - every signed log forgotten, the records kept: the phone that kept a checkpoint refuses
//   them, where a first visit would only say nothing is signed;
// - a record changed on its way to the phone (the page's own answer rewritten in the browser):
//   the phone finds it alone, by the record's hash;
// - a rollback followed by a log reset: the reset names fewer entries than the phone saw.
//
// Then the log key is rotated by the manual's steps (no warning), an earlier key the phone
// never saw is trusted, and a rotation the phone saw no step of is done (each a warning and no
// check mark, until "Trust this change"), and the logs are reset with `hearth admin log reset`
// (shown as a reset, not as tampering, also when the decision log's own record of it has left
// its window and only the ledger's remains).
//
// With HEARTH_TABLE and AWS_ENDPOINT_URL set the server and the admin commands use DynamoDB;
// otherwise SQLite.
//
// Usage: node tests/browser/history.mjs OUTPUT_DIR   (scripts/test runs it on both stores)

import { execFileSync } from "node:child_process";
import { createHash, generateKeyPairSync } from "node:crypto";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ROOT, chromium, FLAGS, addPhoneAuthenticator, check, householdOn, startHearth, statusAfter } from "./lib.mjs";

const OUT = resolve(process.argv[2] || join(ROOT, ".test-output", "browser-history"));
mkdirSync(OUT, { recursive: true });
const UNTRUSTED = "This history cannot be trusted";

// The log keys are secrets of the test's own, so that they can be rotated.
const KEY_ONE = { HEARTH_LOG_KEY: "the history test's first log key" };
// The phone opens the page dozens of times a minute from one address, each a page, its
// scripts and the evidence: more than a person's 120 requests a minute.
const storeEnv = {
  HEARTH_RATE_LIMIT_PER_IP: "1000000",
  ...(process.env.HEARTH_TABLE
    ? { HEARTH_TABLE: process.env.HEARTH_TABLE, AWS_ENDPOINT_URL: process.env.AWS_ENDPOINT_URL }
    : {}),
};
let hearth = await startHearth({ ...storeEnv, ...KEY_ONE });
const { base, dataDir } = hearth;
const port = Number(new URL(base).port);
process.on("exit", () => hearth.server.kill());
let serverEnv = { ...storeEnv, ...KEY_ONE };
const home = householdOn(base, dataDir, serverEnv, "The Okafors");

/** Restarts the server on the same port and data (the browser keeps its pins for the origin)
 * with `env` instead of its log key settings. */
async function restart(env) {
  hearth.server.kill();
  await new Promise((done) => hearth.server.once("exit", done));
  serverEnv = { ...storeEnv, ...env };
  hearth = await startHearth(serverEnv, { port, dataDir });
}

function admin(...args) {
  return JSON.parse(execFileSync(join(ROOT, "target", "debug", "hearth"), ["admin", ...args, "--json"],
    { env: { ...process.env, ...home.store, ...serverEnv } }).toString());
}

function tamper(...args) {
  return execFileSync(join(ROOT, ".venv", "bin", "python"), [join(ROOT, "tests", "browser", "tamper_store.py"), ...args],
    { env: { ...process.env, ...home.store } }).toString().trim();
}

/** A signed-note verifier key nobody here holds: `name+<key id>+base64(0x01 || key)`, the id
 * being the first four bytes of SHA-256(name, "\n", 0x01, key). */
function strangerVkey(name) {
  const { publicKey } = generateKeyPairSync("ed25519");
  const key = Buffer.concat([Buffer.of(1), Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url")]);
  const id = createHash("sha256").update(Buffer.concat([Buffer.from(name + "\n"), key])).digest().subarray(0, 4);
  return `${name}+${id.toString("hex")}+${key.toString("base64")}`;
}

const profile = mkdtempSync(join(tmpdir(), "hearth-chromium-"));
const context = await chromium.launchPersistentContext(profile, { executablePath: "/usr/bin/chromium", args: FLAGS, headless: true });
const errors = [];
// The pages' origin, as the passkeys know it (the invite's).
let origin;
const phone = await context.newPage();
await phone.setViewportSize({ width: 390, height: 844 });
phone.on("pageerror", (error) => errors.push(error.message));
await addPhoneAuthenticator(context, phone);

/** Opens `view` and answers how the phone's check went: its verdict, the check's line, any
 * notices, and the page's text. */
async function visit(view) {
  await phone.goto(`${origin}/household?view=${view}`);
  await phone.waitForFunction(() => {
    const line = document.getElementById("history-check");
    return !line || line.dataset.verdict !== "checking";
  }, null, { timeout: 15000 });
  return phone.evaluate(() => ({
    verdict: document.getElementById("history-check")?.dataset.verdict || "none",
    line: document.getElementById("history-check")?.textContent || "",
    notices: [...document.querySelectorAll("[data-notice]")].map((note) => note.textContent),
    text: document.querySelector("main").textContent,
  }));
}

function trusted(seen, what) {
  check(seen.verdict === "checked", `${what}: ${JSON.stringify(seen)}`);
  check(seen.line.startsWith("\u2713 Checked on this phone"), `${what}: ${seen.line}`);
  check(!seen.text.includes(UNTRUSTED), `${what} says "${UNTRUSTED}": ${seen.text}`);
}

/** Checked, but under a key or witnesses the phone has not accepted: a warning, no mark. */
function unaccepted(seen, what) {
  check(seen.verdict === "unaccepted" && seen.line.startsWith("Not yet trusted"), `${what}: ${JSON.stringify(seen)}`);
  check(!seen.text.includes("Checked on this phone") && !seen.text.includes(UNTRUSTED), `${what}: ${seen.text}`);
}

function distrusted(seen, what, names) {
  check(seen.text.includes(`${UNTRUSTED}: ${names}`), `${what}: ${JSON.stringify(seen)}`);
  check(!seen.text.includes("Checked on this phone"), `${what} is marked as checked: ${seen.text}`);
}

try {
  // A guardian enrols and signs in; the household has decisions and an order.
  const invite = home.admin("passkey", "invite", home.id, "dana");
  origin = new URL(invite.url).origin;
  await phone.goto(invite.url);
  check((await statusAfter(phone, "Create passkey")).includes("ready"), "dana's enrolment");
  await home.tool("record_decision", { action: "heating.lower", reason: "Nobody home until six", approver: "dana", inputs: {} });
  await home.tool("record_decision", { action: "lights.off", reason: "Everyone said good night", approver: "chris", inputs: {} });
  await home.tool("propose_purchase", { product_id: "aa-batteries", variant_id: "4-pack", quantity: 1 });
  await phone.goto(`${origin}/household`);
  await Promise.all([
    phone.waitForURL(`${origin}/household`, { waitUntil: "load" }),
    phone.getByRole("button", { name: "Sign in with a passkey", exact: true }).click(),
  ]);
  await phone.waitForSelector("text=Sign out");

  // First visit: checked, and pinned.
  let seen = await visit("today");
  trusted(seen, "the first visit");
  check(seen.text.includes("PowerCell") && seen.text.includes("lights.off"), `Today: ${seen.text}`);
  const pins = await phone.evaluate((id) => JSON.parse(localStorage.getItem("hearth.pins." + id)), home.id);
  check(pins.logs.decisions.size === 2 && pins.logs.ledger.size >= 1 && pins.keys.length === 1, `the pins: ${JSON.stringify(pins)}`);
  await phone.screenshot({ path: join(OUT, "history-checked-390.png"), fullPage: true });
  const older = join(OUT, `older-${Date.now()}.store`);
  tamper("snapshot", older);

  // The logs grow; the next visit proves they extend what the phone pinned.
  await home.tool("record_decision", { action: "oven.off", reason: "Dinner is done", approver: "dana", inputs: {} });
  await home.tool("propose_purchase", { product_id: "paper-towels", variant_id: "6-rolls", quantity: 1 });
  seen = await visit("why");
  trusted(seen, "a later visit");
  check(seen.line.includes("extending the 2 this phone saw before"), `consistency from the pins: ${seen.line}`);
  seen = await visit("orders");
  trusted(seen, "Orders");
  const newer = join(OUT, `newer-${Date.now()}.store`);
  tamper("snapshot", newer);

  // Rolled back to the older signed state: the server serves it as current; the phone refuses.
  tamper("restore", older);
  seen = await visit("why");
  distrusted(seen, "the rollback", "the decisions log shrank from 3 to 2 entries");
  check(!seen.text.includes("lights.off"), `the rolled-back history is still shown: ${seen.text}`);
  await phone.screenshot({ path: join(OUT, "history-untrusted-390.png"), fullPage: true });
  seen = await visit("orders");
  distrusted(seen, "the rolled-back ledger", "the orders ledger shrank from");

  // Put back as it was: the phone's pins hold, and the check passes again.
  tamper("restore", newer);
  trusted(await visit("today"), "the store put back");

  // A stored record edited: Hearth's own check refuses it, in the same words.
  tamper("edit", "Everyone said good night", "Everyone said good morning");
  seen = await visit("why");
  check(seen.text.includes(UNTRUSTED) && !seen.text.includes("good morning"), `the edited record: ${seen.text}`);
  check(!seen.text.includes("Checked on this phone"), `the edited record is marked as checked: ${seen.text}`);
  const refused = await phone.evaluate(async () => {
    const answer = await fetch("/household/log/decisions");
    return { status: answer.status, body: await answer.json() };
  });
  check(refused.status === 409 && refused.body.error === "untrusted_history"
    && refused.body.message.startsWith(UNTRUSTED), `the edited record's evidence: ${JSON.stringify(refused)}`);
  tamper("edit", "Everyone said good morning", "Everyone said good night");
  trusted(await visit("why"), "the record edited back");

  // Every signed log forgotten, the records kept: nothing left to check them against, which
  // the phone that kept a checkpoint does not take for a server that signs nothing.
  const signed = join(OUT, `signed-${Date.now()}.store`);
  tamper("snapshot", signed);
  tamper("forget-log");
  distrusted(await visit("why"), "the forgotten log", "the decisions log comes with no signed checkpoint");
  tamper("restore", signed);
  trusted(await visit("why"), "the log put back");

  // A record changed on its way to the phone: only the phone's own check is left to find it.
  await phone.route("**/household/log/decisions", async (route) => {
    const answer = await route.fetch();
    const body = (await answer.text()).replace("Dinner is done", "Dinner is burnt");
    await route.fulfill({ response: answer, body });
  });
  seen = await visit("why");
  distrusted(seen, "a record changed on its way", "in the decisions log, record 3 does not match its hash");
  await phone.unroute("**/household/log/decisions");
  trusted(await visit("why"), "the page's own answer again");

  // The manual's rotation (docs/src/self-hosting/log-key-rotation.md): overlap, drop the old
  // key but keep its identity, re-sign the idle. No warning at any step.
  const vkeyOne = admin("log-key").vkey;
  const KEY_TWO = { HEARTH_LOG_KEY: "the history test's second log key", HEARTH_LOG_KEY_VERSION: "2" };
  await restart({ ...KEY_TWO, HEARTH_LOG_KEY_PREVIOUS: KEY_ONE.HEARTH_LOG_KEY });
  await home.tool("record_decision", { action: "door.lock", reason: "Bedtime", approver: "dana", inputs: {} });
  seen = await visit("today");
  trusted(seen, "the overlap");
  check(seen.notices.length === 0, `the overlap warns: ${seen.notices}`);
  await restart({ ...KEY_TWO, HEARTH_LOG_KEY_NAMES_PREVIOUS: vkeyOne });
  seen = await visit("today");
  trusted(seen, "the old key verify-only");
  check(seen.notices.length === 0, `dropping the old key warns: ${seen.notices}`);
  admin("log-key", "re-sign", "--all");
  seen = await visit("today");
  trusted(seen, "the idle re-signed");
  check(seen.notices.length === 0, `re-signing warns: ${seen.notices}`);

  await restart(KEY_TWO);
  seen = await visit("today");
  trusted(seen, "the old identity dropped");
  check(seen.notices.length === 0, `dropping the old identity warns: ${seen.notices}`);

  // An earlier key this phone never saw, now trusted: a warning until the member trusts it.
  await restart({ ...KEY_TWO, HEARTH_LOG_KEY_NAMES_PREVIOUS: strangerVkey("127.0.0.1/hearth-log/v7") });
  seen = await visit("today");
  unaccepted(seen, "the unseen key");
  check(seen.notices.some((note) => note.includes("an earlier log key this phone never saw")), `the unseen key: ${JSON.stringify(seen)}`);
  await phone.screenshot({ path: join(OUT, "history-key-warning-390.png"), fullPage: true });
  await phone.getByRole("button", { name: "Trust this change", exact: true }).click();
  seen = await visit("today");
  trusted(seen, "the key trusted");
  check(seen.notices.length === 0, `the trusted key still warns: ${seen.notices}`);

  // A rotation the phone never saw any step of: the key it pinned is gone. The history still
  // checks (it extends the pinned checkpoint), and the new key is a warning.
  const vkeyTwo = admin("log-key").vkey;
  const KEY_THREE = { HEARTH_LOG_KEY: "the history test's third log key", HEARTH_LOG_KEY_VERSION: "3" };
  await restart({ ...KEY_THREE, HEARTH_LOG_KEY_NAMES_PREVIOUS: vkeyTwo });
  admin("log-key", "re-sign", "--all");
  await restart(KEY_THREE);
  seen = await visit("today");
  unaccepted(seen, "an unannounced key");
  check(seen.notices.some((note) => note.includes("no key this phone knew is published")), `the unannounced key: ${JSON.stringify(seen)}`);
  await phone.getByRole("button", { name: "Trust this change", exact: true }).click();
  check((await visit("today")).notices.length === 0, "the unannounced key, once trusted, still warns");

  // A log reset the new logs record: shown as a reset, and pinned from then on.
  admin("log", "reset", home.id, "--yes");
  seen = await visit("today");
  trusted(seen, "the reset");
  check(seen.notices.filter((note) => note.includes("started a new")).length === 2, `the reset: ${JSON.stringify(seen)}`);
  seen = await visit("today");
  check(seen.notices.length === 0, `the reset is told again: ${seen.notices}`);

  // A rollback, then a reset: the reset names the size the log had when it was reset, fewer
  // entries than the phone saw, so it does not explain the rollback away.
  const beforeRollback = join(OUT, `before-rollback-${Date.now()}.store`);
  tamper("snapshot", beforeRollback);
  await home.tool("record_decision", { action: "blinds.close", reason: "Sunset", approver: "dana", inputs: {} });
  trusted(await visit("why"), "one more decision");
  tamper("restore", beforeRollback);
  admin("log", "reset", home.id, "--log", "decisions", "--yes");
  distrusted(await visit("why"), "a reset after a rollback", "the decisions log was reset from");
  // The phone keeps its pins; a member who is told to go on clears them (a new first visit).
  await phone.evaluate((id) => localStorage.removeItem("hearth.pins." + id), home.id);
  trusted(await visit("why"), "a first visit again");

  // A decision log reset whose first entry has left the decision window (it keeps 25): the
  // ledger's record of it, kept a year, still explains it.
  admin("log", "reset", home.id, "--log", "decisions", "--yes");
  for (let i = 0; i < 25; i++) {
    await home.tool("record_decision", { action: `thermostat.step${i}`, reason: "Evening schedule", approver: "dana", inputs: {} });
  }
  seen = await visit("why");
  trusted(seen, "a decision log reset recorded in the ledger");
  check(seen.notices.some((note) => note.includes("started a new decisions log")), `the ledger's record of the reset: ${JSON.stringify(seen)}`);
  check(seen.line.includes("orders ledger"), `the ledger checked for the reset is named: ${seen.line}`);
  check((await visit("why")).notices.length === 0, "the reset is told again");
  check(errors.length === 0, `page errors: ${errors.join("; ")}`);
  console.log(`household history checked on the phone (${process.env.HEARTH_TABLE ? "DynamoDB" : "SQLite"}): a rollback, an edited record, a forgotten log, a record changed on its way and a reset after a rollback each refused; a key rotation by the manual's steps, unseen and unannounced keys warned of until trusted, and log resets shown as resets`);
} catch (error) {
  console.error(hearth.log());
  throw error;
} finally {
  await context.close();
  hearth.server.kill();
}
