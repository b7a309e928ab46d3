/**
 * Principal binding over HTTP (bind-7, the user half): the demo server behind the
 * SDK's createMcpHandler, real v2 clients over the Streamable HTTP transport whose
 * fetch hands each request to the handler with the authInfo a bearer-token verifier
 * would have produced (createMcpHandler takes authInfo as pass-through).
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createMcpHandler, type AuthInfo } from '@modelcontextprotocol/server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS } from '../helpers/harness.js';

let R: string;
let root: string;
const closers: Array<() => Promise<void>> = [];

beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-http-')));
  root = join(R, 'root');
  mkdirSync(root);
  writeFileSync(join(root, 'report.txt'), 'alice');
});
afterEach(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
  rmSync(R, { recursive: true, force: true });
});

async function serveHttp() {
  const built = await createDemoServer({ roots: [root] });
  const handler = createMcpHandler(() => built.factory());
  closers.push(() => handler.close());
  /** A client whose every request reaches the handler as the given user would after token verification. */
  const clientAs = async (auth: AuthInfo): Promise<Client> => {
    const fetchAs: typeof fetch = async (input, init) => handler.fetch(new Request(input, init), { authInfo: auth });
    const client = new Client({ name: `http-${auth.token}`, version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
    await client.connect(new StreamableHTTPClientTransport(new URL('http://mcp.example.test/mcp'), { fetch: fetchAs }));
    closers.push(() => client.close());
    return client;
  };
  return { clientAs };
}

const user = (name: string, extra: Record<string, unknown> = { sub: name }): AuthInfo => ({
  token: `token-${name}`,
  clientId: 'notes-app',
  scopes: ['mcp'],
  extra,
});

describe('over HTTP, a state is bound to the user who was asked (bind-7)', () => {
  it('refuses with -32602 a state minted for user U1 presented by user U2 of the same OAuth client; U1 then redeems it', async () => {
    const { clientAs } = await serveHttp();
    const alice = await clientAs(user('alice'));
    const mallory = await clientAs(user('mallory'));
    const { state } = asked(await callTool(alice, { name: 'delete_file', arguments: { path: 'report.txt' } }));
    const stolen = await callTool(mallory, {
      name: 'delete_file',
      arguments: { path: 'report.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(stolen).toMatchObject({ kind: 'error', code: -32602 });
    expect(existsSync(join(root, 'report.txt'))).toBe(true);
    const own = await callTool(alice, {
      name: 'delete_file',
      arguments: { path: 'report.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(own).toMatchObject({ kind: 'result', isError: false });
    expect(existsSync(join(root, 'report.txt'))).toBe(false);
  });

  it('treats every user of one OAuth client as one principal when the verifier sets no extra.sub (as docs/library.md warns)', async () => {
    const { clientAs } = await serveHttp();
    const first = await clientAs(user('first', {}));
    const second = await clientAs(user('second', {}));
    const { state } = asked(await callTool(first, { name: 'delete_file', arguments: { path: 'report.txt' } }));
    const other = await callTool(second, {
      name: 'delete_file',
      arguments: { path: 'report.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(other).toMatchObject({ kind: 'result', isError: false });
  });
});
