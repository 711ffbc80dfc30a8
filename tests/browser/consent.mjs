// The account-linking consent page in real headless Chromium at a phone width: a wrong link
// code (the page says so and keeps the form), a denial (the client hears access_denied), a
// right code (the client receives a code it can exchange), and a guardian's passkey instead
// of a code (a CDP virtual authenticator: Sign in with a passkey, and the client's token acts
// for that guardian's household). The redirect URI is a loopback listener of the test's own,
// standing where Alexa+'s link endpoint would.
//
// Usage: node tests/browser/consent.mjs OUTPUT_DIR   (scripts/test runs it)

import { execFileSync } from "node:child_process";
import { createServer } from "node:http";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createHash, randomBytes } from "node:crypto";
import { ROOT, chromium, FLAGS, HEARTH, addPhoneAuthenticator, check, householdOn, startHearth, statusAfter } from "./lib.mjs";

const OUT = resolve(process.argv[2] || join(ROOT, ".test-output", "browser-consent"));
// Where Alexa+ would receive the answer: the test records it.
const received = [];
const callback = createServer((request, response) => {
  // Only the redirects count: Chromium also asks this origin for /favicon.ico.
  const url = new URL(request.url, "http://127.0.0.1");
  if (url.pathname.startsWith("/api/skill/link/")) received.push(url);
  response.writeHead(200, { "content-type": "text/plain" });
  response.end("received");
});
await new Promise((done) => callback.listen(0, "127.0.0.1", done));
const REDIRECT = `http://127.0.0.1:${callback.address().port}/api/skill/link/BROWSER`;
const CLIENT_ID = "consent-client";
const CLIENT_SECRET = randomBytes(24).toString("hex");
const JWT_SECRET = randomBytes(32).toString("hex");

function admin(env, ...args) {
  const output = execFileSync(HEARTH, ["admin", ...args, "--json"], { env: { ...process.env, ...env } });
  return JSON.parse(output.toString());
}

function pkce() {
  const verifier = randomBytes(40).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  return { verifier, challenge };
}

const { server, base, dataDir } = await startHearth({
  MCP_CLIENT_ID: CLIENT_ID,
  MCP_CLIENT_SECRET: CLIENT_SECRET,
  MCP_JWT_SECRET: JWT_SECRET,
  MCP_REDIRECT_URIS: REDIRECT,
});
const store = { HEARTH_DB: join(dataDir, "hearth.db") };
const household = admin(store, "household", "create", "Browser Home").household_id;
const profile = mkdtempSync(join(tmpdir(), "hearth-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  args: FLAGS,
  headless: true,
  viewport: { width: 390, height: 844 },
});
mkdirSync(OUT, { recursive: true });
try {
  const page = context.pages()[0] || (await context.newPage());
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  const { verifier, challenge } = pkce();
/** The client's exchange of `code` for tokens. */
  async function exchange(code) {
    const exchanged = await fetch(base + "/oauth/token", {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: "Basic " + Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64"),
      },
      body: new URLSearchParams({
        grant_type: "authorization_code", code, redirect_uri: REDIRECT,
        code_verifier: verifier, resource: base + "/mcp",
      }),
    });
    check(exchanged.status === 200, `the code exchange answered ${exchanged.status}`);
    return exchanged.json();
  }
  const open = async (state, origin = base) => {
    const query = new URLSearchParams({
      response_type: "code", client_id: CLIENT_ID, redirect_uri: REDIRECT, state,
      code_challenge: challenge, code_challenge_method: "S256",
      resource: base + "/mcp", scope: "mcp:service",
    });
    const response = await page.goto(`${origin}/oauth/authorize?${query}`);
    check(response.status() === 200, `the consent page answered ${response.status()}`);
    check((response.headers()["content-security-policy"] || "").includes("default-src 'none'"), "no strict CSP");
    const heading = await page.textContent("h1");
    check(heading.includes("Link your household"), "the page names what it is for");
    const text = await page.textContent("main");
    check(text.includes("propose purchases"), "the page says in plain words what is granted");
    return response;
  };

  // A wrong code: the page says so, keeps the form, and the client hears nothing.
  await open("state-wrong");
  await page.fill("#link_code", "AAAA-BBBB-CCCC");
  await Promise.all([page.waitForNavigation(), page.click("button.allow")]);
  const problem = await page.textContent("[role=alert]");
  check(problem.includes("not valid"), "a wrong code is named: " + problem);
  check(await page.isVisible("#link_code"), "the form stays for another try");
  check(received.length === 0, "a wrong code sends nothing to the client");
  await page.screenshot({ path: join(OUT, "1-wrong-code.png"), fullPage: true });

  // A denial: the client hears access_denied with its state.
  await open("state-deny");
  await Promise.all([page.waitForURL(REDIRECT + "**"), page.click("button.deny")]);
  const denied = received.pop();
  check(denied.searchParams.get("error") === "access_denied", "a denial answers access_denied");
  check(denied.searchParams.get("state") === "state-deny", "the state comes back");
  check(!denied.searchParams.has("code"), "a denial carries no code");

  // The right code, typed loosely: the client receives a code, and it exchanges.
  const linkCode = admin(store, "link-code", household).code;
  await open("state-allow");
  await page.screenshot({ path: join(OUT, "2-consent.png"), fullPage: true });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 0, `the consent page is ${overflow}px wider than a phone`);
  await page.fill("#link_code", linkCode.toLowerCase().replaceAll("-", " "));
  await Promise.all([page.waitForURL(REDIRECT + "**"), page.click("button.allow")]);
  const allowed = received.pop();
  check(allowed.searchParams.get("state") === "state-allow", "the state comes back");
  check(allowed.searchParams.get("iss") === base, "the issuer is named (RFC 9207)");
  const code = allowed.searchParams.get("code");
  check(code, "the client receives a code");
  const tokens = await exchange(code);
  check(tokens.refresh_token.startsWith("hrt3."), "a refresh token comes with the access token");

  // A guardian's passkey instead of a code. The passkey's page and the consent page share the
  // origin the passkeys are made for.
  const guarded = householdOn(base, dataDir, { MCP_JWT_SECRET: JWT_SECRET }, "Passkey Home");
  await addPhoneAuthenticator(context, page);
  const invite = guarded.admin("passkey", "invite", guarded.id, "dana");
  const origin = new URL(invite.url).origin;
  await page.goto(invite.url);
  check((await statusAfter(page, "Create passkey")).includes("ready"), "the guardian's enrolment");
  const csp = (await open("state-passkey", origin)).headers()["content-security-policy"];
  check(csp.includes("script-src 'self'; connect-src 'self';") && !csp.includes("unsafe"), `the consent page's policy: ${csp}`);
  await page.screenshot({ path: join(OUT, "3-passkey.png"), fullPage: true });
  await Promise.all([
    page.waitForURL(REDIRECT + "**"),
    page.getByRole("button", { name: "Sign in with a passkey", exact: true }).click(),
  ]);
  const byPasskey = received.pop();
  check(byPasskey.searchParams.get("state") === "state-passkey", "the state comes back");
  const passkeyTokens = await exchange(byPasskey.searchParams.get("code"));
  const called = await fetch(base + "/mcp", {
    method: "POST",
    headers: { authorization: `Bearer ${passkeyTokens.access_token}`, "content-type": "application/json",
      accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call",
      params: { name: "record_decision", arguments: { action: "linked", reason: "by a passkey", approver: "dana", inputs: {} } } }),
  });
  const recorded = (await called.json()).result;
  check(recorded && !recorded.isError && recorded.structuredContent.household_id === guarded.id,
    `the passkey's household is the one linked: ${JSON.stringify(recorded)}`);
  check(errors.length === 0, "page errors: " + errors.join("; "));
  console.log("consent page (390px): wrong code, denial, link by code and link by a guardian's passkey passed");
} finally {
  await context.close();
  server.kill();
  callback.close();
}
