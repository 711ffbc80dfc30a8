// mcp-remote (geelen/mcp-remote, pinned in scripts/test), the stdio bridge Claude Desktop and
// other stdio-only hosts run as `npx mcp-remote https://…/mcp`, linking a household for real:
// it discovers Hearth's metadata, registers itself (DCR), prints the consent page's URL (its
// "browser" here is Chromium, driven to type the link code and press Link household), receives
// the code on its own loopback callback, exchanges it with PKCE, and then proxies the host's
// JSON-RPC over stdio: initialize, tools/list and a tool call for the linked household.
//
// Usage: node tests/node/mcp_remote.mjs OUTPUT_DIR   (scripts/test runs it)

import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import { ROOT, chromium, FLAGS, HEARTH, check, startHearth } from "../browser/lib.mjs";

const OUT = resolve(process.argv[2] || join(ROOT, ".test-output", "mcp-remote"));
mkdirSync(OUT, { recursive: true });
const PROXY = join(ROOT, ".tools", "npm", "node_modules", "mcp-remote", "dist", "proxy.js");

const { server, base, dataDir, log } = await startHearth({ MCP_JWT_SECRET: randomBytes(32).toString("hex") });
const env = { ...process.env, HEARTH_DB: join(dataDir, "hearth.db"), HEARTH_DATA_DIR: dataDir };
const admin = (...args) => JSON.parse(execFileSync(HEARTH, ["admin", ...args, "--json"], { env }).toString());
const household = admin("household", "create", "Remote Home").household_id;

// `BROWSER=true`: the opener mcp-remote calls succeeds without opening anything; the test
// opens the URL it prints in Chromium instead.
const proxy = spawn(process.execPath, [PROXY, `${base}/mcp`, "--transport", "http-only"], {
  env: { ...process.env, MCP_REMOTE_CONFIG_DIR: mkdtempSync(join(tmpdir(), "mcp-remote-")), BROWSER: "true" },
  stdio: ["pipe", "pipe", "pipe"],
});
let errors = "";
proxy.stderr.on("data", (chunk) => { errors += chunk; });
const answers = new Map();
let pending = "";
proxy.stdout.on("data", (chunk) => {
  pending += chunk;
  let newline;
  while ((newline = pending.indexOf("\n")) >= 0) {
    const line = pending.slice(0, newline).trim();
    pending = pending.slice(newline + 1);
    if (!line) continue;
    const message = JSON.parse(line);
    if (message.id !== undefined) answers.set(message.id, message);
  }
});

function send(message) {
  proxy.stdin.write(JSON.stringify(message) + "\n");
}

async function answerTo(id, within = 30000) {
  for (let waited = 0; waited < within; waited += 100) {
    if (answers.has(id)) return answers.get(id);
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`no answer to ${id}; mcp-remote said:\n${errors}`);
}

async function printedUrl() {
  for (let waited = 0; waited < 30000; waited += 100) {
    const found = errors.match(/Please authorize this client by visiting:\s+(\S+)/);
    if (found) return found[1];
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`mcp-remote printed no authorization URL:\n${errors}`);
}

const profile = mkdtempSync(join(tmpdir(), "hearth-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium", args: FLAGS, headless: true, viewport: { width: 1280, height: 800 },
});
try {
  send({ jsonrpc: "2.0", id: 1, method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "stdio-host", version: "1.0" } } });
  const url = new URL(await printedUrl());
  check(url.origin === base && url.pathname === "/oauth/authorize", `the consent page: ${url}`);
  check(url.searchParams.get("client_id").startsWith("hc_"), "mcp-remote registered itself");
  check(url.searchParams.get("resource") === `${base}/mcp`, `resource: ${url.searchParams.get("resource")}`);
  const page = context.pages()[0] || (await context.newPage());
  await page.goto(url.toString());
  check((await page.textContent("h1")).includes("Link your household"), "Hearth's consent page");
  await page.fill("#link_code", admin("link-code", household).code);
  await Promise.all([
    page.waitForURL((target) => target.pathname === "/oauth/callback", { timeout: 15000 }),
    page.click("button[value=allow]"),
  ]);
  await page.screenshot({ path: join(OUT, "callback.png") });

  const initialized = await answerTo(1);
  check(initialized.result?.serverInfo?.name, `initialize: ${JSON.stringify(initialized)}`);
  send({ jsonrpc: "2.0", method: "notifications/initialized" });
  send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
  const tools = (await answerTo(2)).result.tools.map((tool) => tool.name);
  check(tools.includes("record_decision"), `tools: ${tools}`);
  send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "record_decision",
    arguments: { action: "opened the garage", reason: "the car is coming home", inputs: {}, approver: "Sam" } } });
  const called = await answerTo(3);
  check(called.result && !called.result.isError, `tools/call: ${JSON.stringify(called)}`);
  check(called.result.structuredContent.household_id === household, "recorded for the linked household");
  check(!log().includes(url.searchParams.get("code_challenge")), "nothing of the request reached the log");
  console.log("mcp-remote: registered, linked in Chromium, initialized, listed and called a tool for the household");
} finally {
  proxy.kill();
  await context.close();
  server.kill();
}
