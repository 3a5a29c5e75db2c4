// A 2025-11-25 session of the official TypeScript SDK's client that outlives the replicas which
// held it, for tests/e2e/test_http_session_resume.py. Usage: node resume.mjs <v1|v2> <url>, with a
// bearer token in MCP_TEST_TOKEN. It opens a legacy session, calls `system_metrics`, prints
// "called", waits for a line on stdin (the test has restarted every replica), calls it twice more
// on the same client and session, ends the session and prints one JSON object: the protocol
// version, the session id before and after, and each call's outcome. Any other failure exits 1.

import { createInterface } from "node:readline";

const [sdk, url] = process.argv.slice(2);
const token = process.env.MCP_TEST_TOKEN;
if (!["v1", "v2"].includes(sdk) || !url || !token) {
  console.error("usage: MCP_TEST_TOKEN=... node resume.mjs <v1|v2> <url>");
  process.exit(2);
}

async function open() {
  const info = { name: "mcp-suite-ts-sdk-resume", version: "1.0.0" };
  if (sdk === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import(
      "@modelcontextprotocol/sdk/client/streamableHttp.js"
    );
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    const client = new Client(info);
    await client.connect(transport);
    return { client, transport };
  }
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    authProvider: { token: async () => token },
  });
  const client = new Client(info, { versionNegotiation: { mode: "legacy" } });
  await client.connect(transport);
  return { client, transport };
}

async function call(client) {
  try {
    const result = await client.callTool({ name: "system_metrics", arguments: {} });
    return result.isError ? "isError" : "ok";
  } catch (error) {
    return `failed: ${error}`;
  }
}

const { client, transport } = await open();
const before = transport.sessionId;
const outcomes = [await call(client)];
process.stdout.write("called\n");
const lines = createInterface({ input: process.stdin });
for await (const _line of lines) break;
lines.close();
process.stdin.destroy(); // nothing more is read: an open stdin would keep Node running
outcomes.push(await call(client), await call(client));
const after = transport.sessionId;
const version = transport.protocolVersion ?? null;
await transport.terminateSession?.().catch(() => {});
await client.close();
process.stdout.write(JSON.stringify({ version, before, after, outcomes }) + "\n");
