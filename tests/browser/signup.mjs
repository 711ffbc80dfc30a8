// Sign-up in real headless Chromium with a CDP virtual authenticator, end to end: the official
// MCP TypeScript SDK's client registers itself (Dynamic Client Registration) and sends the
// person to the consent page; there, with HEARTH_SIGNUP=open, the person names a household and
// themselves, presses Create a household, creates the first guardian's passkey, presses Sign
// in with a passkey, and the SDK's client finishes the authorization and calls a tool for the
// new household. The consent page with its sign-up passes axe-core at 390 px. Then, on a
// server with HEARTH_SIGNUP=invite, an operator's sign-up link opens the sign-up page, which
// posts the token from the link's fragment; the same link used again, once its household has
// its passkey, is refused, and the page says what to do next. Until sign-up's script runs, its
// form is hidden and would post, never put the names in a URL.
//
// Usage: node tests/browser/signup.mjs OUTPUT_DIR   (scripts/test runs it)

import { createServer } from "node:http";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ROOT, chromium, FLAGS, accessible, addPhoneAuthenticator, check, freePort, householdOn, startHearth } from "./lib.mjs";

const SDK = join(ROOT, ".tools", "npm", "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "client");
const { Client } = await import(join(SDK, "index.js"));
const { StreamableHTTPClientTransport } = await import(join(SDK, "streamableHttp.js"));
const { UnauthorizedError } = await import(join(SDK, "auth.js"));

const OUT = resolve(process.argv[2] || join(ROOT, ".test-output", "browser-signup"));
mkdirSync(OUT, { recursive: true });

// The MCP client's own loopback callback, where the browser lands with the code.
const codes = [];
const callback = createServer((request, response) => {
  const url = new URL(request.url, "http://127.0.0.1");
  if (url.pathname === "/callback") codes.push(url.searchParams.get("code"));
  response.writeHead(200, { "content-type": "text/plain" });
  response.end("You can close this window.");
});
await new Promise((done) => callback.listen(0, "127.0.0.1", done));
const REDIRECT = `http://127.0.0.1:${callback.address().port}/callback`;

/** What the SDK asks of an OAuth client application: kept in memory, the browser sent where
 * the SDK says. */
class Provider {
  constructor() { this.saved = {}; }
  get redirectUrl() { return REDIRECT; }
  get clientMetadata() {
    return { client_name: "Sign-up test client", redirect_uris: [REDIRECT], token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"], response_types: ["code"] };
  }
  clientInformation() { return this.saved.client; }
  saveClientInformation(client) { this.saved.client = client; }
  tokens() { return this.saved.tokens; }
  saveTokens(tokens) { this.saved.tokens = tokens; }
  redirectToAuthorization(url) { this.saved.authorization = url; }
  saveCodeVerifier(verifier) { this.saved.verifier = verifier; }
  codeVerifier() { return this.saved.verifier; }
}

// Passkeys are made for the pages' origin: a loopback server's is localhost, so the whole
// deployment is named by it (its issuer, its resource, where the SDK sends the browser).
const port = await freePort();
const open = await startHearth({
  MCP_RESOURCE_URL: `http://localhost:${port}/mcp`,
  MCP_REDIRECT_URIS: "https://alexa.example/api/skill/link/UNUSED",
  HEARTH_SIGNUP: "open",
}, { port });
const base = `http://localhost:${port}`;
const profile = mkdtempSync(join(tmpdir(), "hearth-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium", args: FLAGS, headless: true, viewport: { width: 390, height: 844 },
});
let invited;
try {
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await addPhoneAuthenticator(context, page);

  // The client connects, is told to authorize, registers and names the consent page.
  const provider = new Provider();
  const first = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
  const client = new Client({ name: "signup-test", version: "1.0.0" });
  let unauthorized = false;
  try {
    await client.connect(first);
  } catch (error) {
    unauthorized = error instanceof UnauthorizedError;
    if (!unauthorized) throw error;
  }
  check(unauthorized, "the client was told to authorize");
  check(provider.saved.client?.client_id, "the client registered itself");
  const consent = provider.saved.authorization;
  check(consent && consent.origin === base, `the SDK sends the browser to ${consent}`);

  // Until its script runs, the sign-up form is hidden, and it would post: a press before the
  // script never puts the names in a URL. (Opened first: each opening sets the form's cookie.)
  const bare = await context.newPage();
  await bare.route("**/household/signup.js", (route) => route.abort());
  await bare.goto(consent.href);
  check(await bare.isHidden("#signup-form"), "the sign-up form waits for its script");
  check((await bare.getAttribute("#signup-form", "method")) === "post", "the sign-up form posts");
  await bare.close();

  // A person with no household makes one on the consent page.
  const shown = await page.goto(consent.href);
  check(shown.status() === 200, `the consent page answered ${shown.status()}`);
  const offered = await page.textContent("main");
  check(offered.includes("Create a household"), "the consent page offers Create a household");
  await accessible(page, "the consent page with sign-up");
  await page.fill("#household_name", "The Ashes");
  await page.fill("#member_name", "Robin");
  await page.screenshot({ path: join(OUT, "1-create-a-household-390.png"), fullPage: true });
  await page.getByRole("button", { name: "Create a household", exact: true }).click();
  await page.waitForFunction(() => {
    const text = document.getElementById("signup-status")?.textContent || "";
    return text.includes("ready") || text.includes("not") || text.includes("Try");
  }, null, { timeout: 15000 });
  const made = await page.textContent("#signup-status");
  check(made.includes("Your household is ready"), "the household and its passkey are made: " + made);
  check(await page.evaluate(() => document.activeElement?.id === "passkey-link"),
    "the next step, Sign in with a passkey, has the focus");
  await page.screenshot({ path: join(OUT, "2-household-ready-390.png"), fullPage: true });

  // The new guardian links with the passkey just made, and the client finishes.
  await Promise.all([page.waitForURL(REDIRECT + "**"),
    page.getByRole("button", { name: "Sign in with a passkey", exact: true }).click()]);
  const code = codes.pop();
  check(code, "the client's callback received a code");
  await first.finishAuth(code);
  check(provider.saved.tokens?.access_token, "the client exchanged the code");
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
  await client.connect(transport);
  const recorded = await client.callTool({ name: "record_decision", arguments: {
    action: "signup.linked", reason: "a household made on the consent page", approver: "robin", inputs: {},
  } });
  check(!recorded.isError, "the tool call: " + JSON.stringify(recorded));
  const household = recorded.structuredContent.household_id;
  check(household?.startsWith("hh-"), "the tool acted for a household account: " + JSON.stringify(recorded));
  await client.close();
  check(errors.length === 0, "page errors: " + errors.join("; "));
  console.log("sign-up (open): an SDK client registered, a household made on the consent page, linked with its new passkey, a tool called for it");
} finally {
  open.server.kill();
}

// An operator's sign-up link, on a deployment that takes households only that way.
const invitePort = await freePort();
invited = await startHearth({
  MCP_RESOURCE_URL: `http://localhost:${invitePort}/mcp`,
  MCP_REDIRECT_URIS: "https://alexa.example/api/skill/link/UNUSED",
  HEARTH_SIGNUP: "invite",
}, { port: invitePort });
try {
  const operator = householdOn(`http://127.0.0.1:${invitePort}`, invited.dataDir,
    { HEARTH_SIGNUP: "invite", MCP_REDIRECT_URIS: "https://alexa.example/api/skill/link/UNUSED",
      MCP_RESOURCE_URL: `http://localhost:${invitePort}/mcp` }, "Operator's own");
  const link = operator.admin("signup-link").url;
  check(link.startsWith(`http://localhost:${invitePort}/household/signup#invite=`), "the link: " + link);
  const page = await context.newPage();
  await addPhoneAuthenticator(context, page);
  // Without the link's fragment the page says what it needs.
  await page.goto(`http://localhost:${invitePort}/household/signup`);
  const needs = await page.textContent("#signup-status");
  check(needs.includes("sign-up link"), "the page without its link: " + needs);
  check(await page.isDisabled("#signup"), "nothing to press without the link");
  // The link pasted into that tab: the page reads the fragment anew.
  await page.goto(link);
  await page.waitForFunction(() => document.getElementById("signup")?.disabled === false, null, { timeout: 15000 });
  await accessible(page, "the sign-up page");
  await page.fill("#household_name", "The Invited");
  await page.fill("#member_name", "Sam");
  await page.getByRole("button", { name: "Create a household", exact: true }).click();
  await page.waitForFunction(() => (document.getElementById("signup-status")?.textContent || "").length > 20
    && !document.getElementById("signup-status").textContent.startsWith("Waiting")
    && !document.getElementById("signup-status").textContent.startsWith("Making"), null, { timeout: 15000 });
  const ready = await page.textContent("#signup-status");
  check(ready.includes("Your household is ready"), "the invited household: " + ready);
  check(await page.isVisible("#signup-next"), "the way to the household's page is shown");
  await page.screenshot({ path: join(OUT, "3-signup-page-390.png"), fullPage: true });
  // The same link again, in a fresh page: refused, and told what to do.
  const again = await context.newPage();
  await again.goto(link);
  await again.fill("#household_name", "Twice");
  await again.fill("#member_name", "Sam");
  await again.getByRole("button", { name: "Create a household", exact: true }).click();
  await again.waitForFunction(() => (document.getElementById("signup-status")?.textContent || "").includes("does not work"),
    null, { timeout: 15000 });
  check(await again.isDisabled("#signup"), "a used link cannot be pressed again");
  const listed = operator.admin("household", "list").households.map((h) => h.name).sort();
  check(JSON.stringify(listed) === JSON.stringify(["Operator's own", "The Invited"]), "households: " + listed);
  console.log("sign-up (invite): the sign-up page posts the link's token from its fragment, once; axe-core passes");
} finally {
  invited.server.kill();
  await context.close();
  callback.close();
}
