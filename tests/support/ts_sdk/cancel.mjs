// A call cancelled by the official TypeScript SDK's client in a 2025-11-25 session, for
// tests/trio/test_http_app.py. Usage: node cancel.mjs <v1|v2> <url>, with a bearer token in
// MCP_TEST_TOKEN. It opens a legacy session, calls the test tool `sleep`, prints "calling", waits
// for a line on stdin (the test has seen the call start), aborts the call (the SDK sends
// notifications/cancelled), waits for the call's POST to be answered and read, makes one more
// request, ends the session and prints one JSON object: the error events the client raised and
// how the cancelled POST was answered. Any other failure exits 1 with the error on stderr.

import { createInterface } from "node:readline";

const [sdk, url] = process.argv.slice(2);
const token = process.env.MCP_TEST_TOKEN;
if (!["v1", "v2"].includes(sdk) || !url || !token) {
  console.error("usage: MCP_TEST_TOKEN=... node cancel.mjs <v1|v2> <url>");
  process.exit(2);
}

// The call's POST, seen through the transport's `fetch` option: its answer, then its body read.
let callPost = null;
async function watchedFetch(input, init) {
  const response = await fetch(input, init);
  const body = typeof init?.body === "string" ? init.body : "";
  if (init?.method === "POST" && body.includes('"tools/call"')) {
    const copy = response.clone();
    callPost = copy.text().then((text) => ({
      status: response.status,
      contentType: response.headers.get("content-type"),
      body: text,
    }));
  }
  return response;
}

async function open() {
  const info = { name: "mcp-suite-ts-sdk-cancel", version: "1.0.0" };
  if (sdk === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import(
      "@modelcontextprotocol/sdk/client/streamableHttp.js"
    );
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      fetch: watchedFetch,
    });
    const client = new Client(info);
    await client.connect(transport);
    const call = (signal) =>
      client.callTool({ name: "sleep", arguments: { seconds: 60, tag: 1 } }, undefined, { signal });
    return { client, transport, call };
  }
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    authProvider: { token: async () => token },
    fetch: watchedFetch,
  });
  const client = new Client(info, { versionNegotiation: { mode: "legacy" } });
  await client.connect(transport);
  const call = (signal) => client.callTool({ name: "sleep", arguments: { seconds: 60, tag: 1 } }, { signal });
  return { client, transport, call };
}

const { client, transport, call } = await open();
const errors = [];
client.onerror = (error) => errors.push(String(error));
transport.onerror ??= (error) => errors.push(String(error));
const controller = new AbortController();
const pending = call(controller.signal).then(
  () => "answered",
  (error) => (controller.signal.aborted ? "aborted" : `failed: ${error}`),
);
process.stdout.write("calling\n");
const lines = createInterface({ input: process.stdin });
for await (const _line of lines) break;
lines.close();
process.stdin.destroy(); // nothing more is read: an open stdin would keep Node running
controller.abort("cancelled by the test");
const outcome = await pending;
while (callPost === null) await new Promise((resolve) => setTimeout(resolve, 10));
const answer = await callPost;
// The transport reads the answer after the fetch returns it: give it a moment, then a round trip.
await new Promise((resolve) => setTimeout(resolve, 200));
const tools = (await client.listTools()).tools.length;
if (transport.sessionId) await transport.terminateSession();
await client.close();
process.stdout.write(JSON.stringify({ sdk, outcome, answer, errors, tools }) + "\n");
