// The MCP Inspector 2.x (pinned in scripts/test), the real software, linking a household in
// headless Chromium: started on a local Hearth's /mcp as an ad-hoc Streamable HTTP server, its
// Connect switch meets the 401, its backend discovers Hearth and registers itself, and the page
// goes to Hearth's consent page, where the test types a link code and presses Link household.
// Back in the Inspector, connected, it lists the tools and executes one for the household.
//
// Usage: node tests/browser/inspector.mjs OUTPUT_DIR   (scripts/test runs it)

import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import { ROOT, chromium, FLAGS, HEARTH, check, freePort, startHearth } from "./lib.mjs";

const OUT = resolve(process.argv[2] || join(ROOT, ".test-output", "inspector"));
mkdirSync(OUT, { recursive: true });
const LAUNCHER = join(ROOT, ".tools", "npm", "node_modules", "@modelcontextprotocol", "inspector",
  "clients", "launcher", "build", "index.js");

const { server, base, dataDir, log } = await startHearth({ MCP_JWT_SECRET: randomBytes(32).toString("hex") });
const env = { ...process.env, HEARTH_DB: join(dataDir, "hearth.db"), HEARTH_DATA_DIR: dataDir };
const admin = (...args) => JSON.parse(execFileSync(HEARTH, ["admin", ...args, "--json"], { env }).toString());
// The demo household's rules, so that its purchase records can be read.
const policy = JSON.parse(readFileSync(join(ROOT, "data", "household.json"), "utf8"));
delete policy.household_id;
delete policy.name;
const policyFile = join(dataDir, "policy.json");
writeFileSync(policyFile, JSON.stringify(policy));
const household = admin("household", "create", "Inspector Home", "--policy", policyFile).household_id;

// Its own process group, so that stopping it stops the web server it starts too. Secrets in
// memory: there is no keychain here.
const inspector = spawn(process.execPath, [LAUNCHER, "--web", "--transport", "http", "--server-url", `${base}/mcp`], {
  // Free ports rather than its fixed 6274 and 6275, so that a second run beside it can start.
  env: { ...process.env, BROWSER: "none", MCP_AUTO_OPEN_ENABLED: "false", MCP_INSPECTOR_SECRET_STORE: "memory",
    CLIENT_PORT: String(await freePort()), MCP_SANDBOX_PORT: String(await freePort()) },
  stdio: ["ignore", "pipe", "pipe"],
  detached: true,
});
let printed = "";
inspector.stdout.on("data", (chunk) => { printed += chunk; });
inspector.stderr.on("data", (chunk) => { printed += chunk; });

const profile = mkdtempSync(join(tmpdir(), "hearth-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium", args: FLAGS, headless: true, viewport: { width: 1280, height: 900 },
});
try {
  let url;
  for (let waited = 0; waited < 60000 && !url; waited += 200) {
    url = printed.match(/(http:\/\/127\.0\.0\.1:\d+\S*MCP_INSPECTOR_API_TOKEN=\w+)/)?.[1];
    if (!url) await new Promise((done) => setTimeout(done, 200));
  }
  check(url, `the Inspector did not start:\n${printed}`);
  const page = context.pages()[0] || (await context.newPage());
  await page.goto(url);
  await page.getByText("Disconnected").waitFor({ timeout: 30000 });
  await page.locator("input[type=checkbox]").first().click({ force: true });
  await page.waitForURL((target) => target.pathname === "/oauth/authorize", { timeout: 30000 });
  const consent = new URL(page.url());
  check(consent.origin === base, `Hearth's consent page: ${consent}`);
  check(consent.searchParams.get("client_id").startsWith("hc_"), "the Inspector registered itself");
  await page.screenshot({ path: join(OUT, "1-consent.png"), fullPage: true });
  await page.fill("#link_code", admin("link-code", household).code);
  await Promise.all([
    page.waitForURL((target) => target.port === new URL(url).port, { timeout: 30000 }),
    page.click("button[value=allow]"),
  ]);
  await page.getByText("Connected", { exact: true }).waitFor({ timeout: 30000 });
  await page.screenshot({ path: join(OUT, "2-connected.png"), fullPage: true });
  await page.getByText("Tools", { exact: true }).first().click();
  await page.getByRole("button", { name: /household_activity/ }).click();
  await page.getByRole("button", { name: "Execute Tool" }).click();
  await page.getByText("Results").first().waitFor({ timeout: 30000 });
  await page.waitForTimeout(1000);
  await page.screenshot({ path: join(OUT, "3-tool.png"), fullPage: true });
  const shown = await page.innerText("body");
  check(!shown.includes("Tool Error"), `the tool call failed: ${shown.slice(0, 2000)}`);
  // The household's own week, against its own rules' budget.
  check(shown.includes("of the $400.00 budget") && shown.includes(household),
    `the household's own activity: ${shown.slice(0, 2000)}`);
  check(log().includes('"method":"tools/call"') && log().includes('"tool":"household_activity"'),
    "Hearth's log has the call");
  console.log("MCP Inspector 2.12.0: registered, linked through the consent page, connected, executed household_activity for the household");
} finally {
  await context.close();
  try { process.kill(-inspector.pid); } catch (_) { /* already gone */ }
  server.kill();
}
