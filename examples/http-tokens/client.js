// An MCP client that calls delete_file over HTTP with a bearer token, and says yes when asked.
// Usage: node client.js [MCP URL]   (default http://127.0.0.1:8787/mcp)
import { readFileSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { importJWK, SignJWT } from 'jose';

const url = new URL(process.argv[2] ?? 'http://127.0.0.1:8787/mcp');

// A short-lived access token, as your authorization server would issue it: its issuer is the
// server's --auth-issuer, its audience the MCP URL (the server's resource), its subject the user.
const jwk = JSON.parse(readFileSync('signing-key.json', 'utf8'));
const token = await new SignJWT({ scope: 'mcp' })
  .setProtectedHeader({ alg: 'RS256', kid: jwk.kid, typ: 'at+jwt' })
  .setIssuer('https://issuer.example')
  .setAudience(url.href)
  .setSubject('alice')
  .setIssuedAt()
  .setExpirationTime('5m')
  .sign(await importJWK(jwk, 'RS256'));

// A 2026-07-28 client that can show a form to its human (elicitation).
const client = new Client(
  { name: 'example-client', version: '1.0.0' },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
);
// Where a real host shows the question to its human; this script answers yes for them.
client.setRequestHandler('elicitation/create', async (request) => {
  console.log(`asked: ${request.params.message}`);
  return { action: 'accept', content: { confirmed: true } };
});

await client.connect(
  new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
);
const result = await client.callTool({ name: 'delete_file', arguments: { path: 'report.txt' } });
console.log(result.content.map((c) => c.text).join('\n'));
await client.close();
process.exitCode = result.isError ? 1 : 0;
