// The official TypeScript SDK's Streamable HTTP client against one MCP endpoint, for
// tests/e2e/test_http_ts_sdk.py. Usage: node client.mjs <v1|v2> <modern|legacy> <url>, with the
// bearer token in MCP_TEST_TOKEN and the file to read in MCP_TEST_FILE. It connects, lists the
// tools and resources, calls read_only_sql and sandbox_fs_read, reads the first resource, ends
// the session (legacy) and prints one JSON object of what it saw on stdout. Any error exits 1
// with the error on stderr.

const [sdk, era, url] = process.argv.slice(2);
const token = process.env.MCP_TEST_TOKEN;
const file = process.env.MCP_TEST_FILE;
if (!["v1", "v2"].includes(sdk) || !["modern", "legacy"].includes(era) || !url || !token || !file) {
  console.error("usage: MCP_TEST_TOKEN=... MCP_TEST_FILE=... node client.mjs <v1|v2> <modern|legacy> <url>");
  process.exit(2);
}
if (sdk === "v1" && era === "modern") {
  console.error("the v1 SDK (@modelcontextprotocol/sdk) speaks the 2025 era only");
  process.exit(2);
}

async function open() {
  const info = { name: "mcp-suite-ts-sdk-test", version: "1.0.0" };
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
    return { client, transport, version: transport.protocolVersion, protocolEra: "legacy" };
  }
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    authProvider: { token: async () => token },
  });
  const mode = era === "modern" ? { pin: "2026-07-28" } : "legacy";
  const client = new Client(info, { versionNegotiation: { mode } });
  await client.connect(transport);
  return {
    client,
    transport,
    version: client.getNegotiatedProtocolVersion(),
    protocolEra: client.getProtocolEra(),
  };
}

const { client, transport, version, protocolEra } = await open();
const sessionId = transport.sessionId ?? null;
const tools = (await client.listTools()).tools.map((tool) => tool.name);
const sql = await client.callTool({
  name: "read_only_sql",
  arguments: { sql: "SELECT 6 * 7 AS answer" },
});
const read = await client.callTool({ name: "sandbox_fs_read", arguments: { relative_path: file } });
const resources = (await client.listResources()).resources.map((resource) => resource.uri);
const contents = resources.length
  ? (await client.readResource({ uri: resources[0] })).contents.map((c) => ({
      uri: c.uri,
      mimeType: c.mimeType ?? null,
      text: c.text ?? null,
    }))
  : [];
if (sessionId !== null) {
  await transport.terminateSession();
}
await client.close();

process.stdout.write(
  JSON.stringify({
    sdk,
    era,
    protocolVersion: version ?? null,
    protocolEra: protocolEra ?? null,
    sessionId,
    tools,
    sql: { isError: sql.isError ?? false, structuredContent: sql.structuredContent ?? null },
    read: { isError: read.isError ?? false, structuredContent: read.structuredContent ?? null },
    resources,
    contents,
  }) + "\n",
);
