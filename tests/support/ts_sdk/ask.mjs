// The official TypeScript SDK (v2, @modelcontextprotocol/client) pinned to 2026-07-28 over
// Streamable HTTP, answering the yes/no question of the asking test server's `confirm_echo`, for
// tests/e2e/test_asking_ts_sdk.py. Usage: node ask.mjs <url> <yes|no|cannot>: with `yes` or `no` the
// client declares elicitation and its elicitation/create handler answers accordingly (the SDK's
// input-required driver calls it and retries); with `cannot` it declares no elicitation. Prints one
// JSON object: the questions it was asked and the call's result. Any error exits 1.

const [url, answer] = process.argv.slice(2);
if (!url || !["yes", "no", "cannot"].includes(answer)) {
  console.error("usage: node ask.mjs <url> <yes|no|cannot>");
  process.exit(2);
}
const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
const transport = new StreamableHTTPClientTransport(new URL(url));
const capabilities = answer === "cannot" ? {} : { elicitation: {} };
const client = new Client(
  { name: "mcp-suite-ts-sdk-ask", version: "1.0.0" },
  { capabilities, versionNegotiation: { mode: { pin: "2026-07-28" } } },
);
const asked = [];
if (answer !== "cannot") {
  client.setRequestHandler("elicitation/create", async (request) => {
    asked.push(request.params.message);
    return { action: "accept", content: { approve: answer === "yes" } };
  });
}
await client.connect(transport);
const protocolVersion = client.getNegotiatedProtocolVersion() ?? null;
const result = await client.callTool({ name: "confirm_echo", arguments: { text: "hello" } });
await client.close();
process.stdout.write(
  JSON.stringify({
    protocolVersion,
    asked,
    isError: result.isError ?? false,
    structuredContent: result.structuredContent ?? null,
    content: result.content ?? [],
  }) + "\n",
);
