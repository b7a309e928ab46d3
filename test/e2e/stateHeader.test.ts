/**
 * BUG-17 end to end: someone holding the server's key (the `--key-file` of a real
 * `mcp-confirm` process, the built CLI over stdio) opens a genuine round-1 state
 * and seals the same claims again with a protected header we never write, or
 * spells a part in non-canonical base64url. The SDK's verify hook refuses it with
 * -32602 and the file stays; the control, the same claims re-sealed with our own
 * header (or the genuine state), deletes the file once.
 *
 * Needs `npm run build` first. A real v2 client pinned to 2026-07-28 drives the rounds by hand.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { Client } from '@modelcontextprotocol/client';
import { compactDecrypt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyRing, type KeySpec } from '../../src/state/keyRing.js';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS, type Reply } from '../helpers/harness.js';
import {
  assembleJwe,
  headerVariants,
  nonCanonicalLastCharacter,
  ourHeaderText,
  secretKeyOf,
  withPart,
} from '../helpers/jwe.js';
import { InPlaceStdioTransport } from '../helpers/processes.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

let R: string;
let root: string;
let spec: KeySpec;
let client: Client;
let stderr = '';

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error('dist/ is missing: run npm run build first');
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-header-')));
  root = join(R, 'allowed');
  mkdirSync(root);
  spec = KeyRing.generateSpec('k1');
  const keyFile = join(R, 'keys.json');
  writeFileSync(keyFile, JSON.stringify({ keys: [spec] }), { mode: 0o600 });
  const transport = new InPlaceStdioTransport({
    command: process.execPath,
    args: [MAIN, '--root', root, '--key-file', keyFile],
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  client = new Client({ name: 'state-header-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(transport).catch((e: unknown) => {
    throw new Error(`the server failed to start: ${(e as Error).message}; its stderr: ${JSON.stringify(stderr)}`, {
      cause: e,
    });
  });
});
afterAll(async () => {
  await client?.close().catch(() => {});
  if (R) rmSync(R, { recursive: true, force: true });
});

const round1 = (path: string): Promise<Reply> => callTool(client, { name: 'delete_file', arguments: { path } });
const round2 = (path: string, state: string): Promise<Reply> =>
  callTool(client, { name: 'delete_file', arguments: { path }, inputResponses: ACCEPT, requestState: state });

/** A fresh file in the root and a genuine round-1 state for it, opened with the key (jose): its plaintext claims. */
async function genuineState(name: string): Promise<{ state: string; plaintext: Buffer }> {
  writeFileSync(join(root, name), 'keep me');
  const { state } = asked(await round1(name));
  const opened = await compactDecrypt(state, secretKeyOf(spec), {
    keyManagementAlgorithms: ['dir'],
    contentEncryptionAlgorithms: ['A256GCM'],
  });
  expect(Buffer.from(state.split('.')[0]!, 'base64url').toString('utf8')).toBe(ourHeaderText('k1'));
  return { state, plaintext: Buffer.from(opened.plaintext) };
}

/** The refusal of the state itself by the SDK's verify hook, and the file untouched. */
function expectRefusedAndIntact(reply: Reply, name: string): void {
  expect(reply, JSON.stringify(reply)).toMatchObject({ kind: 'error', code: -32602 });
  expect(readFileSync(join(root, name), 'utf8')).toBe('keep me');
}

/** The control: `state` deletes the file once; presenting it again is refused as spent. */
async function expectDeletesOnce(name: string, state: string): Promise<void> {
  expect(await round2(name, state)).toMatchObject({
    kind: 'result',
    isError: false,
    text: `Deleted \`${join(root, name)}\` (7 bytes).`,
  });
  expect(existsSync(join(root, name))).toBe(false);
  const replay = await round2(name, state);
  expect(replay).toMatchObject({ kind: 'result', isError: true });
  if (replay.kind === 'result') expect(replay.text).toMatch(/^\[ERR_CONFIRM_SPENT\]/);
}

describe('a state re-sealed under the server key with a header we never write (BUG-17)', () => {
  it('hard-2: a genuine round-1 state re-sealed with "zip":"DEF" added (plaintext deflated) is refused with -32602, the file intact; the same re-seal with our header deletes it once', async () => {
    const { plaintext } = await genuineState('hard-2.txt');
    const zipped = assembleJwe(
      `${ourHeaderText('k1').slice(0, -1)},"zip":"DEF"}`,
      deflateRawSync(plaintext),
      secretKeyOf(spec),
    );
    expectRefusedAndIntact(await round2('hard-2.txt', zipped), 'hard-2.txt');
    await expectDeletesOnce('hard-2.txt', assembleJwe(ourHeaderText('k1'), plaintext, secretKeyOf(spec)));
  });

  it.each(
    headerVariants('k1')
      .filter((v) => !v.deflate)
      .map((v, i) => [v.label, v, i] as const),
  )(
    'refuses with -32602 a genuine round-1 state re-sealed with the header %s, the file intact; the same re-seal with our header deletes it once',
    async (_label, variant, i) => {
      const name = `variant-${i}.txt`;
      const { plaintext } = await genuineState(name);
      expectRefusedAndIntact(await round2(name, assembleJwe(variant.text, plaintext, secretKeyOf(spec))), name);
      await expectDeletesOnce(name, assembleJwe(ourHeaderText('k1'), plaintext, secretKeyOf(spec)));
    },
  );
});

describe('a genuine state in non-canonical base64url', () => {
  it('refuses with -32602 a genuine state whose tag is spelled with a non-canonical last character (the same bytes to a lenient decoder), the file intact; the genuine state deletes it once', async () => {
    const { state } = await genuineState('respelled.txt');
    const spellings = nonCanonicalLastCharacter(state.split('.')[4]!);
    expect(spellings).toHaveLength(15);
    for (const spelling of spellings)
      expectRefusedAndIntact(
        await round2(
          'respelled.txt',
          withPart(state, 4, () => spelling),
        ),
        'respelled.txt',
      );
    expectRefusedAndIntact(
      await round2(
        'respelled.txt',
        withPart(state, 4, (tag) => `${tag}==`),
      ),
      'respelled.txt',
    );
    await expectDeletesOnce('respelled.txt', state);
  });
});
