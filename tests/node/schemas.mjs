// What a TypeScript MCP client sees: the official TypeScript SDK lists Hearth's tools (its
// client compiles every output schema with Ajv and warns about anything it does not know),
// and a strict Ajv 2020-12 with the standard formats compiles every input and output schema.
// Usage: node tests/node/schemas.mjs MCP_URL (the bearer token in HEARTH_TEST_TOKEN).

import { join, resolve } from "node:path";

const ROOT = resolve(new URL("../..", import.meta.url).pathname);
const MODULES = join(ROOT, ".tools", "npm", "node_modules");
const { Client } = await import(join(MODULES, "@modelcontextprotocol/sdk/dist/esm/client/index.js"));
const { StreamableHTTPClientTransport } = await import(
  join(MODULES, "@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js"));
const { default: Ajv2020 } = await import(join(MODULES, "ajv/dist/2020.js"));
const { default: addFormats } = await import(join(MODULES, "ajv-formats/dist/index.js"));

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const [url] = process.argv.slice(2);
const token = process.env.HEARTH_TEST_TOKEN;
check(url && token, "usage: HEARTH_TEST_TOKEN=... node tests/node/schemas.mjs MCP_URL");

// Everything the SDK and Ajv print while listing is a finding.
const printed = [];
for (const level of ["log", "warn", "error"]) {
  const original = console[level];
  console[level] = (...args) => {
    printed.push(args.map(String).join(" "));
    original(...args);
  };
}

const client = new Client({ name: "hearth-schema-check", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
}));
const { tools } = await client.listTools();
check(tools.length >= 18, `expected Hearth's tools, got ${tools.length}`);

const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats(ajv);
for (const tool of tools) {
  for (const [which, schema] of [["input", tool.inputSchema], ["output", tool.outputSchema]]) {
    check(schema, `${tool.name} has no ${which} schema`);
    try {
      ajv.compile(schema);
    } catch (error) {
      throw new Error(`${tool.name} ${which} schema: ${error.message}`);
    }
  }
}
await client.close();
check(printed.length === 0, `the SDK or Ajv printed while listing tools:\n${printed.join("\n")}`);
console.log(`schemas: ${tools.length} tools, ${tools.length * 2} schemas compiled strictly, no warnings`);
