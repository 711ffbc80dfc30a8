// What the browser tests share: the project root, playwright-core's Chromium (Debian's
// /usr/bin/chromium), its flags, a check that throws, and a local Hearth server on a free
// loopback port.

import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const ROOT = resolve(new URL("../..", import.meta.url).pathname);
// playwright-core lives in the project-local npm folder scripts/test installs.
export const { chromium } = await import(join(ROOT, ".tools", "npm", "node_modules", "playwright-core", "index.mjs"));
export const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];
export const HEARTH = join(ROOT, "target", "debug", "hearth");

export function check(condition, message) {
  if (!condition) throw new Error(message);
}

const AXE = readFileSync(join(ROOT, ".tools", "npm", "node_modules", "axe-core", "axe.min.js"), "utf8");

/** axe-core over the page as shown: WCAG 2.0–2.2 A and AA rules, no serious or critical
 * violation allowed. Run through the DevTools protocol, which the page's CSP does not govern. */
export async function accessible(page, what) {
  await page.evaluate(AXE);
  const result = await page.evaluate(() => axe.run(document, {
    runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"] },
  }));
  const bad = result.violations.filter((violation) => ["serious", "critical"].includes(violation.impact));
  check(bad.length === 0, `${what}: ${JSON.stringify(bad.map((v) => ({ id: v.id, nodes: v.nodes.map((n) => n.target) })))}`);
  check(result.passes.some((rule) => rule.id === "color-contrast"), `${what}: contrast was checked`);
  // Mobile first: nothing wider than the screen.
  const [scrolled, shown] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  check(scrolled <= shown, `${what}: ${scrolled} px wide on a ${shown} px screen`);
}

/** Gives `page` its own CDP virtual authenticator, as a phone's: CTAP2, internal, resident
 * keys, user verification that succeeds. Answers the CDP session and the authenticator id. */
export async function addPhoneAuthenticator(context, page) {
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2", transport: "internal", hasResidentKey: true,
      hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true,
    },
  });
  return { cdp, authenticatorId };
}

/** Presses `button` on a passkey page and answers what its status line then says. */
export async function statusAfter(page, button) {
  await page.getByRole("button", { name: button, exact: true }).click();
  await page.waitForFunction(() => {
    const text = document.getElementById("status")?.textContent || "";
    return text && !text.startsWith("Waiting");
  }, null, { timeout: 15000 });
  return page.textContent("#status");
}

export function freePort() {
  return new Promise((done) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

/** Starts target/debug/hearth with `env` over a fresh data directory (or `dataDir`, on `port`:
 * a restart, where the browser keeps what it stored for the origin); resolves once /healthz
 * answers, with the process, its base URL and its data directory. */
export async function startHearth(env, { port: givenPort, dataDir: givenDir } = {}) {
  const port = givenPort || await freePort();
  const dataDir = givenDir || mkdtempSync(join(tmpdir(), "hearth-browser-"));
  const server = spawn(HEARTH, [], {
    env: { ...process.env, ...env, HEARTH_ADDR: `127.0.0.1:${port}`, HEARTH_DATA_DIR: dataDir },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  server.stderr.on("data", (chunk) => { log += chunk; });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(base + "/healthz")).ok) return { server, base, dataDir, log: () => log };
    } catch (_) { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  server.kill();
  throw new Error("the server did not start: " + log);
}

/** Starts a loopback push service that decrypts what Hearth pushes, as a phone would (RFC 8291,
 * tests/python/push_receiver.py). Resolves with the process, the subscription a phone would
 * hand out, and a function answering every message received so far. */
export async function startPushReceiver() {
  const pushed = join(mkdtempSync(join(tmpdir(), "hearth-push-")), "pushed.jsonl");
  const receiver = spawn(join(ROOT, ".venv", "bin", "python"), [join(ROOT, "tests", "python", "push_receiver.py"), pushed],
    { stdio: ["ignore", "pipe", "inherit"] });
  const subscription = JSON.parse(await new Promise((done) => {
    createInterface({ input: receiver.stdout }).once("line", done);
  }));
  const pushes = () => (existsSync(pushed)
    ? readFileSync(pushed, "utf8").trim().split("\n").filter(Boolean).map(JSON.parse) : []);
  return { receiver, subscription, pushes };
}

/** A household on the server at `base`, whose data directory is `dataDir` and whose store and
 * keys `env` names (the server's own): `admin(...)` runs `hearth admin … --json` against them,
 * the household is made with data/household.json's rules, and `tool(name, args)` calls its MCP
 * tools through a household token, answering their structured content. */
export function householdOn(base, dataDir, env, name) {
  const store = { ...env, HEARTH_DATA_DIR: dataDir, HEARTH_ADDR: new URL(base).host,
    ...(env.HEARTH_TABLE ? {} : { HEARTH_DB: join(dataDir, "hearth.db") }) };
  const admin = (...args) => JSON.parse(execFileSync(HEARTH, ["admin", ...args, "--json"],
    { env: { ...process.env, ...store } }).toString());
  const policy = JSON.parse(readFileSync(join(ROOT, "data", "household.json"), "utf8"));
  delete policy.household_id;
  delete policy.name;
  const policyFile = join(dataDir, "policy.json");
  writeFileSync(policyFile, JSON.stringify(policy));
  const id = admin("household", "create", name, "--policy", policyFile).household_id;
  const token = admin("token", id).access_token;
  async function tool(toolName, args) {
    const response = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json",
        accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: toolName, arguments: args } }),
    });
    const result = (await response.json()).result;
    check(result && !result.isError, `${toolName}: ${JSON.stringify(result)}`);
    return result.structuredContent;
  }
  return { id, admin, tool, store };
}
