// A slow call whose progress the official TypeScript SDK's client follows, for
// tests/e2e/test_talk_sdk.py. Usage: node progress.mjs <v1|v2> <modern|legacy> <url> <seconds>
// (a server without authorization: MCP_HTTP_AUTH=none). It calls the test tool `sleep` with an
// `onprogress` handler (the SDK then sends a progress token) and prints one JSON object: each
// progress notification seen, then whether the result was an error and how many notifications
// had arrived when the result did. Any failure exits 1 with the error on stderr.

const [sdk, era, url, seconds] = process.argv.slice(2);
if (!["v1", "v2"].includes(sdk) || !["modern", "legacy"].includes(era) || !url || !seconds) {
  console.error("usage: node progress.mjs <v1|v2> <modern|legacy> <url> <seconds>");
  process.exit(2);
}

const info = { name: "mcp-suite-ts-sdk-progress", version: "1.0.0" };
const seen = [];
const onprogress = (progress) => seen.push(progress);
const args = { name: "sleep", arguments: { seconds: Number(seconds), tag: 1 } };
let client;
let result;
if (sdk === "v1") {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  client = new Client(info);
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  result = await client.callTool(args, undefined, { onprogress });
} else {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const mode = era === "modern" ? { pin: "2026-07-28" } : "legacy";
  client = new Client(info, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  result = await client.callTool(args, { onprogress });
}
const atResult = seen.length;
await client.close();
process.stdout.write(JSON.stringify({ seen, atResult, isError: result.isError ?? false }) + "\n");
