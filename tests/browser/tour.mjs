// The demo's tour (docs/src/getting-started/demo.md) in real headless Chromium (Debian's
// /usr/bin/chromium, driven by playwright-core), at a phone width and at a desktop width, each
// against its own fresh local server. Every card is checked for what it must show, including
// the browser's own hash check and a listing's markup shown literally; screenshots go to the
// output folder.
// The assistant option's turns run against the Converse stand-in (target/debug/
// converse-stand-in with tests/assistant/scripts.json), and speech still being fetched is
// checked to stop with Stop, speech off, the microphone and reconnecting.
// The phone beside the speaker: a host that signs nothing proposes, the refusal while no
// phone has a passkey, a guardian's passkey created in the phone's window (a CDP virtual
// authenticator), then an order approved there and placed, another declined, and the host
// reading what the household bought.
//
// Usage: node tests/browser/tour.mjs OUTPUT_DIR   (scripts/test runs it)

import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createHash, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { ROOT, chromium, FLAGS, addPhoneAuthenticator, check, startHearth, statusAfter } from "./lib.mjs";

const OUT = resolve(process.argv[2] || join(ROOT, ".test-output", "browser"));
const TOUR = JSON.parse(readFileSync(join(ROOT, "demo", "tour.json"), "utf8")).turns;
const VIEWPORTS = [
  { name: "phone", width: 390, height: 844 },
  { name: "desktop", width: 1280, height: 900 },
];

// The scripted Converse stand-in the assistant option's model calls go to.
async function startStandIn() {
  const standIn = spawn(join(ROOT, "target", "debug", "converse-stand-in"),
    [join(ROOT, "tests", "assistant", "scripts.json")], { stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise((done, fail) => {
    let out = "";
    standIn.stdout.on("data", (chunk) => {
      out += chunk;
      const match = /listening on (\S+)/.exec(out);
      if (match) done(match[1]);
    });
    standIn.on("exit", (code) => fail(new Error("the Converse stand-in exited: " + code)));
  });
  return { standIn, url };
}

async function startServer() {
  const token = "demo-" + randomBytes(16).toString("hex");
  const { standIn, url: converse } = await startStandIn();
  const { server, base, dataDir, log } = await startHearth({
    HEARTH_DEMO_DEVICE: "1",
    COUNTERSIGN_HOST_KEY: randomBytes(24).toString("hex"),
    MCP_JUDGE_TOKEN_HASHES: createHash("sha256").update(token).digest("hex"),
    MCP_CLIENT_ID: "demo-client",
    MCP_CLIENT_SECRET: randomBytes(24).toString("hex"),
    MCP_JWT_SECRET: randomBytes(32).toString("hex"),
    // Polly is not reachable from the test: /tts answers 503 and the page falls back.
    AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: "testing", AWS_SECRET_ACCESS_KEY: "testing",
    AWS_ENDPOINT_URL: "http://127.0.0.1:9",
    AWS_ENDPOINT_URL_BEDROCK_RUNTIME: converse,
    // Every request comes from 127.0.0.1, and an assistant turn is a dozen MCP requests; the
    // limits at their defaults are tested in Rust.
    HEARTH_RATE_LIMIT_PER_SUBJECT: "1000000", HEARTH_RATE_LIMIT_PER_IP: "1000000",
  });
  return { server, standIn, base, token, log, db: join(dataDir, "hearth.db") };
}

// A policy of two witnesses (both needed) and checkpoints cosigned by both, by one, and by
// one plus a forged line, signed with Node's Ed25519 (a second implementation of the formats).
function witnessFixture() {
  const vkey = (name, type, raw) => {
    const blob = Buffer.concat([Buffer.from([type]), raw]);
    const id = createHash("sha256").update(Buffer.concat([Buffer.from(name + "\n"), blob])).digest().subarray(0, 4);
    return `${name}+${id.toString("hex")}+${blob.toString("base64")}`;
  };
  const raw = (key) => key.export({ format: "der", type: "spki" }).subarray(-32);
  const text = "h/hearth/aa/decisions/1\n3\n" + Buffer.alloc(32, 7).toString("base64") + "\n";
  const witnesses = ["hub", "grandma"].map((name) => ({ name, keyName: "w.example/" + name, ...generateKeyPairSync("ed25519") }));
  const cosign = (witness, body = text) => {
    const time = Buffer.alloc(8);
    time.writeBigUInt64BE(1800000000n);
    const signature = sign(null, Buffer.from(`cosignature/v1\ntime 1800000000\n${body}`), witness.privateKey);
    const id = Buffer.from(vkey(witness.keyName, 4, raw(witness.publicKey)).split("+")[1], "hex");
    return `\u2014 ${witness.keyName} ${Buffer.concat([id, time, signature]).toString("base64")}\n`;
  };
  const log = generateKeyPairSync("ed25519");
  const logLine = `\u2014 h/hearth-log/v1 ${Buffer.concat([Buffer.alloc(4), sign(null, Buffer.from(text), log.privateKey)]).toString("base64")}\n`;
  const note = text + "\n" + logLine;
  const policy = `log ${vkey("h/hearth-log/v1", 1, raw(log.publicKey))}\n` +
    witnesses.map((w) => `witness ${w.name} ${vkey(w.keyName, 4, raw(w.publicKey))} http://127.0.0.1:9\n`).join("") +
    "group both all hub grandma\nquorum both\n";
  return {
    policy,
    both: note + cosign(witnesses[0]) + cosign(witnesses[1]),
    one: note + cosign(witnesses[0]),
    forged: note + cosign(witnesses[0]) + cosign(witnesses[1], text.replace("\n3\n", "\n4\n")),
  };
}

async function newestCard(page) {
  return page.locator("#cards > li").first();
}

/** Says `words` as `speaker` and answers the card it made. */
async function turnCard(page, speaker, words) {
  const before = await page.locator("#cards > li").count();
  await page.selectOption("#speaker", speaker);
  await page.fill("#words", words);
  await page.click("#send");
  await page.waitForFunction((n) => document.querySelectorAll("#cards > li").length > n && document.body.dataset.busy === "false", before);
  return newestCard(page);
}

/** The phone beside the speaker, at this viewport (see the header). */
async function phoneStory(context, page, viewport, shots, log) {
  const label = `${viewport.name} phone`;
  const say = async (card) => (await card.locator("[data-field=say]").first().textContent()) || "";
  let card = await turnCard(page, "host", "buy two packs of double A batteries");
  check((await say(card)).includes("Nobody in this household can approve orders on a phone yet"), `${label}: before any passkey: ${await say(card)}`);

  await page.selectOption("#phone-owner", "dana");
  await page.click("#phone-setup");
  const invite = page.locator("[data-testid=phone-invite] a").first();
  await invite.waitFor();
  const secrets = [new URL(await invite.getAttribute("href")).pathname.split("/").pop()];
  const opened = context.waitForEvent("page");
  await invite.click();
  const phone = await opened;
  const phoneErrors = [];
  phone.on("pageerror", (error) => phoneErrors.push(error.message));
  await phone.setViewportSize({ width: 390, height: 760 });
  await addPhoneAuthenticator(context, phone);
  await phone.waitForLoadState();
  let said = await statusAfter(phone, "Create passkey");
  check(said.includes("ready"), `${label}: dana's enrolment: ${said}`);
  await phone.screenshot({ path: join(shots, "phone-1-enrolled.png"), fullPage: true });

  card = await turnCard(page, "host", "buy two packs of double A batteries");
  check((await card.locator("[data-field=outcome]").first().textContent()) === "needs approval", `${label}: ${await card.textContent()}`);
  check((await say(card)).includes("phones"), `${label}: the host says "${await say(card)}"`);
  const pages = context.pages().length;
  const approval = page.locator("[data-testid=phone-approval] a").first();
  secrets.push(new URL(await approval.getAttribute("href")).pathname.split("/").pop());
  await approval.click();
  await phone.waitForURL(/\/passkeys\/approve\//);
  check(context.pages().length === pages, `${label}: the approval opened in another window than the phone`);
  check((await phone.textContent("dl")).includes("PowerCell AA Alkaline Batteries"), `${label}: the phone shows the order`);
  await page.screenshot({ path: join(shots, "phone-2-waiting.png"), fullPage: true });
  said = await statusAfter(phone, "Approve");
  check(said.startsWith("Approved. Hearth ordered"), `${label}: the approval: ${said}`);
  await phone.screenshot({ path: join(shots, "phone-3-approved.png"), fullPage: true });

  card = await turnCard(page, "host", "buy the garden hose");
  check((await card.locator("[data-field=outcome]").first().textContent()) === "needs approval", `${label}: ${await card.textContent()}`);
  await page.locator("[data-testid=phone-approval] a").first().click();
  await phone.waitForFunction(() => (document.querySelector("dl")?.textContent || "").includes("Hose"));
  said = await statusAfter(phone, "Decline");
  check(said.startsWith("Declined"), `${label}: the decline: ${said}`);

  card = await turnCard(page, "host", "what did we buy this week?");
  check((await card.getAttribute("data-tool")) === "household_activity" && !(await card.getAttribute("data-error")), `${label}: ${await card.textContent()}`);
  check((await card.textContent()).includes("PowerCell"), `${label}: the host reads the order: ${await card.textContent()}`);
  await page.screenshot({ path: join(shots, "phone-4-activity.png"), fullPage: true });
  check(phoneErrors.length === 0, `${label}: errors on the phone's pages: ${phoneErrors.join("; ")}`);
  check(secrets.every((secret) => secret.length > 20 && !log().includes(secret)), `${label}: a link's token reached the server log`);
  await phone.close();
}

async function runTour(viewport) {
  const { server, standIn, base, token, db, log } = await startServer();
  const profile = mkdtempSync(join(tmpdir(), "hearth-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    args: FLAGS,
    headless: true,
    viewport: { width: viewport.width, height: viewport.height },
  });
  const shots = join(OUT, viewport.name);
  mkdirSync(shots, { recursive: true });
  try {
    const page = context.pages()[0] || (await context.newPage());
    const errors = [];
    page.on("pageerror", (error) => errors.push(error.message));
    const response = await page.goto(base + "/demo");
    check(response.ok(), "GET /demo failed");
    check((response.headers()["content-security-policy"] || "").includes("script-src 'self'"), "no CSP");
    const notice = (await page.textContent("[data-testid=notice]")).replace(/\s+/g, " ");
    check(notice.includes("not Amazon's product"), "the page must say it is simulated");

    await page.fill("#judge-token", token);
    await page.click("#connect-button");
    await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Connected"));
    check((await page.inputValue("#judge-token")) === "", "the token field must be cleared");
    const stored = await page.evaluate(() => [localStorage.length, sessionStorage.length, document.cookie]);
    check(stored[0] === 0 && stored[1] === 0 && stored[2] === "", "nothing may be stored: " + stored);
    check(!(await page.content()).includes(token), "the token must not be in the page");
    await page.screenshot({ path: join(shots, "00-connected.png"), fullPage: true });

    const scratch = mkdtempSync(join(tmpdir(), "hearth-tour-"));
    let step = 0;
    for (const turn of TOUR) {
      step++;
      if (turn.router) {
        await page.selectOption("#router", turn.router);
        continue;
      }
      if (turn.tamper) {
        const args = turn.tamper.replaceAll("{dir}", scratch).split(" ");
        execFileSync("python3", [join(ROOT, "scripts", "tamper_ledger.py"), ...args, "--sqlite", db]);
        continue;
      }
      const before = await page.locator("#cards > li").count();
      await page.selectOption("#speaker", turn.speaker);
      await page.fill("#words", turn.words);
      await page.click("#send");
      await page.waitForFunction((n) => document.querySelectorAll("#cards > li").length > n && document.body.dataset.busy === "false", before);
      const card = await newestCard(page);
      const label = `${viewport.name} turn ${step} (${turn.words})`;
      const tool = await card.getAttribute("data-tool");
      check(tool === turn.tool, `${label}: tool ${tool}, expected ${turn.tool}`);
      if (turn.say) {
        const say = (await card.locator("[data-field=say]").first().textContent()) || "";
        check(say.includes(turn.say), `${label}: says "${say}"`);
      }
      if (turn.text) {
        const text = await card.textContent();
        check(text.includes(turn.text), `${label}: the card shows "${text}"`);
      }
      if (turn.outcome) {
        const outcome = await card.locator("[data-field=outcome]").first().textContent();
        check(outcome === turn.outcome, `${label}: outcome "${outcome}"`);
      }
      if (turn.order) {
        const order = await card.locator("[data-field=order-id]").textContent();
        check(order.startsWith("SIM-"), `${label}: order number "${order}"`);
      }
      if (turn.reason) {
        const reasons = await card.locator("[data-field=reasons]").textContent();
        check(reasons.includes(turn.reason), `${label}: reasons "${reasons}"`);
      }
      if (turn.browser_check) {
        const badge = card.locator("[data-check=browser]");
        await page.waitForFunction((el) => el.dataset.agrees !== undefined, await badge.elementHandle());
        check((await badge.getAttribute("data-agrees")) === "true", `${label}: ${await badge.textContent()}`);
        check((await badge.textContent()).includes("agrees with the server"), `${label}: browser check text`);
      }
      if (turn.log_check || turn.log_failed) {
        const badge = card.locator("[data-check=log]");
        await page.waitForFunction((el) => el.dataset.agrees !== undefined, await badge.elementHandle());
        const text = await badge.textContent();
        check((await badge.getAttribute("data-agrees")) === String(Boolean(turn.log_check)), `${label}: ${text}`);
        check(text.includes(turn.log_check || turn.log_failed), `${label}: log check "${text}"`);
      }
      if (turn.listing) {
        const listing = card.locator("[data-field=listing]").first();
        check((await listing.textContent()).includes(turn.listing), `${label}: the markup must show literally`);
        check((await card.locator("b").count()) === 0, `${label}: listing markup became HTML`);
      }
      for (const field of ["period", "relay", "reply"]) {
        if (!turn[field]) continue;
        const shown = (await card.locator(`[data-field=${field}]`).first().textContent()) || "";
        check(shown.includes(turn[field]), `${label}: ${field} "${shown}"`);
      }
      if (turn.chart) {
        const spend = await card.locator("[data-field=spend]").textContent();
        check(spend.includes(turn.chart), `${label}: chart "${spend}"`);
      }
      await page.screenshot({ path: join(shots, String(step).padStart(2, "0") + ".png"), fullPage: true });
    }

    // The page's log check names a fork and a truncation, not only the restored backup above.
    const verdicts = await page.evaluate(async () => {
      const a = new Uint8Array(32), b = new Uint8Array(32).fill(1);
      const outcome = (promise) => promise.then(() => "ok", (error) => error.message);
      return [
        await outcome(HearthLog.checkConsistency(3, a, 3, b, [])),
        await outcome(HearthLog.checkConsistency(5, a, 4, a, [])),
        await outcome(HearthLog.checkConsistency(4, a, 4, a, [])),
      ];
    });
    check(verdicts[0].includes("forked"), `${viewport.name}: a fork is named: ${verdicts[0]}`);
    check(verdicts[1].includes("shrank from 5 to 4"), `${viewport.name}: ${verdicts[1]}`);
    check(verdicts[2] === "ok", `${viewport.name}: the same tree is consistent: ${verdicts[2]}`);

    // The device's witness check (tlog-cosignature v1 under a tlog-policy), fed cosignatures
    // made here with Node's own Ed25519: a quorum met, one short, a forged line, and the
    // warning for a new log id or epoch.
    const witnessed = await page.evaluate(async (input) => {
      const policy = await HearthLog.parsePolicy(input.policy);
      const of = async (note) => HearthLog.witnessesOf(HearthLog.parseNote(note), policy);
      return [
        await of(input.both), await of(input.one), await of(input.forged),
        HearthLog.newOrigin("h/hearth/aa/decisions/1", "h/hearth/aa/decisions/2"),
        HearthLog.newOrigin("h/hearth/aa/decisions/1", "h/hearth/bb/decisions/1"),
      ];
    }, witnessFixture());
    check(witnessed[0].met && witnessed[0].cosigned.join() === "grandma,hub", `${viewport.name}: ${JSON.stringify(witnessed[0])}`);
    check(!witnessed[1].met && witnessed[1].cosigned.join() === "hub", `${viewport.name}: ${JSON.stringify(witnessed[1])}`);
    check(!witnessed[2].met && witnessed[2].cosigned.join() === "hub", `${viewport.name}: a forged cosignature counted`);
    check(witnessed[3].includes("epoch 2 after epoch 1"), `${viewport.name}: ${witnessed[3]}`);
    check(witnessed[4].includes("a new log replaced"), `${viewport.name}: ${witnessed[4]}`);

    await phoneStory(context, page, viewport, shots, log);

    // Read answers aloud asks /tts (here it fails, so the page falls back quietly).
    await page.check("#read-aloud");
    const spoken = page.waitForRequest((request) => request.url().endsWith("/tts") && request.method() === "POST");
    await page.selectOption("#speaker", "chris");
    await page.fill("#words", "why are the lights dim?");
    await page.click("#send");
    await spoken;
    await page.waitForFunction(() => document.querySelector("[data-testid=speech-status]").textContent !== "");
    await page.click("#stop");
    const speechStatus = await page.textContent("[data-testid=speech-status]");
    check(speechStatus.includes("Amazon Polly is unavailable (Amazon Polly: connection failed)"), `${viewport.name}: speech status "${speechStatus}"`);

    // Speech still being fetched is cancelled, not played late: count what the page starts
    // playing (audio or the browser's voice) while /tts answers only when released.
    await page.evaluate(() => {
      window.__spoken = 0;
      HTMLMediaElement.prototype.play = function () { window.__spoken++; return Promise.resolve(); };
      if (window.speechSynthesis) window.speechSynthesis.speak = () => { window.__spoken++; };
    });
    // A gate /tts answers through: closed before each case, opened after its cancel.
    let gate, release;
    const closeGate = () => { gate = new Promise((done) => { release = done; }); };
    await page.route("**/tts", async (route) => {
      await gate;
      await route.fulfill({ status: 200, contentType: "audio/mpeg", body: Buffer.from("ID3") }).catch(() => {});
    });
    const cancels = {
      nothing: async () => {},
      stop: () => page.click("#stop"),
      "speech off": () => page.uncheck("#read-aloud"),
      reconnect: async () => {
        await page.fill("#judge-token", token);
        await page.click("#connect-button");
        await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Connected"));
      },
    };
    if (!(await page.isDisabled("#mic"))) cancels.microphone = () => page.click("#mic");
    console.log(`${viewport.name}: speech in flight is cancelled by ${Object.keys(cancels).filter((how) => how !== "nothing").join(", ")}`);
    for (const [how, cancel] of Object.entries(cancels)) {
      closeGate();
      await page.check("#read-aloud");
      await page.evaluate(() => { window.__spoken = 0; });
      const fetching = page.waitForRequest((request) => request.url().endsWith("/tts"));
      await page.fill("#words", "why are the lights dim?");
      await page.click("#send");
      await fetching;
      await cancel();
      release();
      await page.waitForTimeout(300);
      const spokenCount = await page.evaluate(() => window.__spoken);
      check(spokenCount === (how === "nothing" ? 1 : 0), `${viewport.name}: after ${how}, ${spokenCount} speech(es) started`);
    }
    await page.unroute("**/tts");

    // An expired or revoked token: the page says so and asks to reconnect.
    await page.route("**/mcp", (route) => route.fulfill({ status: 401, body: "" }));
    await page.fill("#words", "what's waiting?");
    await page.click("#send");
    await page.waitForFunction(() => document.querySelector("#status").textContent.includes("reconnect"));
    check(await page.isDisabled("#send"), "sending must stop until reconnected");
    await page.screenshot({ path: join(shots, "99-expired.png"), fullPage: true });

    // The page fits the viewport: no horizontal scrolling.
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(overflow <= 0, `${viewport.name}: the page is ${overflow}px wider than the screen`);
    check(errors.length === 0, "page errors: " + errors.join("; "));
    console.log(`${viewport.name} (${viewport.width}px): ${TOUR.length} tour steps and the phone beside the speaker passed`);
  } finally {
    await context.close();
    server.kill();
    standIn.kill();
  }
}

for (const viewport of VIEWPORTS) {
  await runTour(viewport);
}
