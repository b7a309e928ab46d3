/**
 * The two-round flow of any confirmed tool, through real clients. The tool
 * here deletes notes from an in-memory notebook, so these tests see the guard
 * alone; the file tool has its own end-to-end tests in test/e2e.
 */
import { McpServer } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createConfirmation, type ConfirmationOptions, type Confirmation } from '../../src/guard/confirmation.js';
import { wrapStore, type ConfirmStore } from '../../src/store/confirmStore.js';
import type { SpendOutcome } from '../../src/store/ledger.js';
import { MemoryLedger } from '../../src/store/memory.js';
import { KeyRing } from '../../src/state/keyRing.js';
import { question } from '../../src/prompt/render.js';
import { UNKNOWN_HINT } from '../../src/cli/common.js';
import { ACCEPT, asked, connect, connectV1, tamper, type Connected } from '../helpers/harness.js';

interface Notebook {
  notes: Map<string, string>;
  deleted: string[];
}

function notebook(): Notebook {
  return {
    notes: new Map([
      ['groceries', 'milk'],
      ['diary', 'secret'],
      ['todo', 'write tests'],
    ]),
    deleted: [],
  };
}

const NoteInput = z.strictObject({ title: z.string() });
/** What a client that cannot answer the question is told, in both eras (the 2026-era one as the -32021's message). */
const NO_ELICITATION_TEXT =
  '[ERR_CONFIRM_NO_ELICITATION] This tool needs a human confirmation, but the client did not declare the elicitation capability, so it cannot ask; nothing was done. With passkey approval, this server would instead answer with a link where a person approves the call with their passkey.';

function register(
  confirmation: Confirmation,
  server: McpServer,
  book: Notebook,
  name = 'delete_note',
  wording = 'Delete the note',
) {
  confirmation.register(
    server,
    name,
    { inputSchema: NoteInput, annotations: { destructiveHint: true } },
    {
      fingerprint: (args) => {
        const body = book.notes.get(args.title);
        if (body === undefined) throw new Error('no such note');
        return { length: body.length };
      },
      question: (args, fp) => question`${wording} ${args.title}` + ` (${fp.length} characters)?`,
      act: (args) => {
        book.notes.delete(args.title);
        book.deleted.push(`${name}:${args.title}`);
        return { content: [{ type: 'text', text: `deleted note ${args.title}` }] };
      },
      nothingDone: 'nothing was deleted',
    },
  );
}

async function setup(options: ConfirmationOptions & { wording?: string; secondTool?: boolean } = {}) {
  const confirmation = await createConfirmation(options);
  const book = notebook();
  const factory = () => {
    const server = new McpServer({ name: 'notes', version: '0.0.0' }, { ...confirmation.serverOptions });
    register(confirmation, server, book, 'delete_note', options.wording);
    if (options.secondTool) register(confirmation, server, book, 'archive_note', 'Archive the note');
    return server;
  };
  return { confirmation, book, factory };
}

const open: Connected[] = [];
async function client(factory: () => McpServer, opts: Parameters<typeof connect>[1] = {}) {
  const c = await connect(factory, opts);
  open.push(c);
  return c;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

describe('round 1', () => {
  it('asks with one form elicitation under "confirm" and a requestState, touching nothing', async () => {
    const { book, factory } = await setup();
    const c = await client(factory);
    const reply = await c.call('delete_note', { title: 'groceries' });
    expect(reply.kind).toBe('input_required');
    if (reply.kind !== 'input_required') return;
    expect(Object.keys(reply.result.inputRequests ?? {})).toEqual(['confirm']);
    const entry = reply.result.inputRequests!.confirm as {
      method?: string;
      params: { mode?: string; message: string; requestedSchema: unknown };
    };
    expect(entry.params.requestedSchema).toEqual({
      type: 'object',
      properties: { confirmed: { type: 'boolean', title: 'Confirm', description: expect.any(String) } },
      required: ['confirmed'],
    });
    expect(entry.params.message).toContain('groceries');
    expect(typeof reply.state).toBe('string');
    expect(book.notes.has('groceries')).toBe(true);
    expect(book.deleted).toEqual([]);
  });

  it('still asks when round 1 already carries an accepting answer but no state (bind-4)', async () => {
    const { book, factory } = await setup();
    const c = await client(factory);
    const reply = await c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT });
    expect(reply.kind).toBe('input_required');
    expect(book.deleted).toEqual([]);
  });

  it('seals the state: the client cannot read the arguments or the question in it', async () => {
    const { factory } = await setup();
    const c = await client(factory);
    const { state } = asked(await c.call('delete_note', { title: 'groceries' }));
    expect(state.split('.')).toHaveLength(5);
    const decoded = state
      .split('.')
      .map((p) => Buffer.from(p, 'base64url').toString('latin1'))
      .join('|');
    expect(decoded).not.toContain('groceries');
    expect(decoded).not.toContain('delete_note');
  });
});

describe('round 2 answers', () => {
  it('acts once on accept with confirmed: true', async () => {
    const { book, factory } = await setup();
    const c = await client(factory);
    const { state } = asked(await c.call('delete_note', { title: 'groceries' }));
    const reply = await c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state });
    expect(reply).toMatchObject({ kind: 'result', isError: false, text: 'deleted note groceries' });
    expect(book.deleted).toEqual(['delete_note:groceries']);
  });

  it.each([
    ['decline', { confirm: { action: 'decline' } }, 'You declined'],
    ['cancel', { confirm: { action: 'cancel' } }, 'You cancelled'],
    ['confirmed: false', { confirm: { action: 'accept', content: { confirmed: false } } }, 'You did not confirm'],
    [
      'confirmed: "false" (a string, bind-5)',
      { confirm: { action: 'accept', content: { confirmed: 'false' } } },
      'You did not confirm',
    ],
    [
      'confirmed: "true" (a string, bind-5)',
      { confirm: { action: 'accept', content: { confirmed: 'true' } } },
      'You did not confirm',
    ],
    ['confirmed: 1 (bind-5)', { confirm: { action: 'accept', content: { confirmed: 1 } } }, 'You did not confirm'],
    [
      'decline carrying confirmed: true (bind-5)',
      { confirm: { action: 'decline', content: { confirmed: true } } },
      'You declined',
    ],
    ['accept without content (bind-5)', { confirm: { action: 'accept' } }, 'You did not confirm'],
  ])('does nothing, without an error, on %s', async (_label, inputResponses, why) => {
    const { book, factory } = await setup();
    const c = await client(factory);
    const { state } = asked(await c.call('delete_note', { title: 'groceries' }));
    const reply = await c.call('delete_note', { title: 'groceries' }, { inputResponses, requestState: state });
    expect(reply).toMatchObject({ kind: 'result', isError: false });
    if (reply.kind === 'result') expect(reply.text).toBe(`${why}; nothing was deleted.`);
    expect(book.deleted).toEqual([]);
    expect(book.notes.has('groceries')).toBe(true);
  });

  it('asks again when the answer is under another key (bind-5) or missing, and the fresh question still works', async () => {
    const { book, factory } = await setup();
    const c = await client(factory);
    const first = asked(await c.call('delete_note', { title: 'groceries' }));
    const wrongKey = await c.call(
      'delete_note',
      { title: 'groceries' },
      { inputResponses: { other: ACCEPT.confirm }, requestState: first.state },
    );
    const second = asked(wrongKey);
    expect(second.state).not.toBe(first.state);
    const none = asked(await c.call('delete_note', { title: 'groceries' }, { requestState: second.state }));
    expect(book.deleted).toEqual([]);
    const done = await c.call(
      'delete_note',
      { title: 'groceries' },
      { inputResponses: ACCEPT, requestState: none.state },
    );
    expect(done).toMatchObject({ kind: 'result', isError: false });
    expect(book.deleted).toEqual(['delete_note:groceries']);
  });

  it('ignores an answer smuggled under "__proto__" (an inherited, not own, confirm entry): asks again, deletes nothing', async () => {
    const { book, factory } = await setup();
    const c = await client(factory);
    const { state } = asked(await c.call('delete_note', { title: 'groceries' }));
    const smuggled = JSON.parse(
      '{"__proto__":{"confirm":{"action":"accept","content":{"confirmed":true}}}}',
    ) as unknown;
    const reply = await c.call(
      'delete_note',
      { title: 'groceries' },
      { inputResponses: smuggled, requestState: state },
    );
    expect(reply.kind).toBe('input_required');
    expect(book.deleted).toEqual([]);
    const inContent = JSON.parse(
      '{"confirm":{"action":"accept","content":{"__proto__":{"confirmed":true}}}}',
    ) as unknown;
    const again = asked(reply);
    const second = await c.call(
      'delete_note',
      { title: 'groceries' },
      { inputResponses: inContent, requestState: again.state },
    );
    expect(second).toMatchObject({ kind: 'result', isError: false });
    expect(book.deleted).toEqual([]);
  });

  it('asks again when round 2 carries an answer but no state', async () => {
    const { book, factory } = await setup();
    const c = await client(factory);
    asked(await c.call('delete_note', { title: 'groceries' }));
    const reply = await c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT });
    expect(reply.kind).toBe('input_required');
    expect(book.deleted).toEqual([]);
  });
});

describe('spent once', () => {
  it('refuses a confirmation spent twice with ERR_CONFIRM_SPENT', async () => {
    const { book, factory } = await setup();
    const c = await client(factory);
    const { state } = asked(await c.call('delete_note', { title: 'groceries' }));
    const first = await c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state });
    expect(first).toMatchObject({ kind: 'result', isError: false });
    book.notes.set('groceries', 'milk'); // the note comes back; the old approval must not delete it again
    const second = await c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state });
    expect(second).toMatchObject({ kind: 'result', isError: true });
    if (second.kind === 'result') expect(second.text).toMatch(/^\[ERR_CONFIRM_SPENT\] /);
    expect(book.deleted).toEqual(['delete_note:groceries']);
  });

  it('spends on decline too: the same state then accepted is refused (spend-2)', async () => {
    const { book, factory } = await setup();
    const c = await client(factory);
    const { state } = asked(await c.call('delete_note', { title: 'groceries' }));
    const declined = await c.call(
      'delete_note',
      { title: 'groceries' },
      { inputResponses: { confirm: { action: 'decline' } }, requestState: state },
    );
    expect(declined).toMatchObject({ kind: 'result', isError: false });
    const accepted = await c.call(
      'delete_note',
      { title: 'groceries' },
      { inputResponses: ACCEPT, requestState: state },
    );
    expect(accepted.kind === 'result' && accepted.text.startsWith('[ERR_CONFIRM_SPENT]')).toBe(true);
    expect(book.deleted).toEqual([]);
  });

  it('acts exactly once when one accepted round 2 is fired 32 times at once (spend-1, one process)', async () => {
    const { book, factory } = await setup();
    const c = await client(factory);
    const { state } = asked(await c.call('delete_note', { title: 'groceries' }));
    const replies = await Promise.all(
      Array.from({ length: 32 }, () =>
        c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state }),
      ),
    );
    const ok = replies.filter((r) => r.kind === 'result' && !r.isError);
    const spent = replies.filter((r) => r.kind === 'result' && r.text.startsWith('[ERR_CONFIRM_SPENT]'));
    expect(ok).toHaveLength(1);
    expect(spent).toHaveLength(31);
    expect(book.deleted).toEqual(['delete_note:groceries']);
  });

  it('refuses round 1 with ERR_CONFIRM_CAPACITY beyond the per-principal bound, and frees the slot when spent', async () => {
    const ledger = new MemoryLedger({ maxPerPrincipal: 2 });
    const { factory } = await setup({ store: ledger });
    const c = await client(factory);
    const a = asked(await c.call('delete_note', { title: 'groceries' }));
    asked(await c.call('delete_note', { title: 'diary' }));
    const third = await c.call('delete_note', { title: 'todo' });
    expect(third.kind === 'result' && third.text.startsWith('[ERR_CONFIRM_CAPACITY]')).toBe(true);
    expect(ledger.size).toBe(2);
    await c.call(
      'delete_note',
      { title: 'groceries' },
      { inputResponses: { confirm: { action: 'cancel' } }, requestState: a.state },
    );
    expect((await c.call('delete_note', { title: 'todo' })).kind).toBe('input_required');
  });
});

describe('bound to the exact call', () => {
  it('refuses a state moved onto other arguments with ERR_CONFIRM_MISMATCH without spending it (bind-1)', async () => {
    const { book, factory } = await setup();
    const c = await client(factory);
    const { state } = asked(await c.call('delete_note', { title: 'groceries' }));
    const moved = await c.call('delete_note', { title: 'diary' }, { inputResponses: ACCEPT, requestState: state });
    expect(moved.kind === 'result' && moved.text.startsWith('[ERR_CONFIRM_MISMATCH]')).toBe(true);
    expect(book.notes.has('diary')).toBe(true);
    // Control: the same state still serves its own call, once.
    const own = await c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state });
    expect(own).toMatchObject({ kind: 'result', isError: false });
    expect(book.deleted).toEqual(['delete_note:groceries']);
  });

  it('refuses a state presented on another confirmed tool (bind-2)', async () => {
    const { book, factory } = await setup({ secondTool: true });
    const c = await client(factory);
    const { state } = asked(await c.call('delete_note', { title: 'groceries' }));
    const other = await c.call('archive_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state });
    expect(other.kind === 'result' && other.text.startsWith('[ERR_CONFIRM_MISMATCH]')).toBe(true);
    expect(book.deleted).toEqual([]);
    const own = await c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state });
    expect(own).toMatchObject({ kind: 'result', isError: false });
  });

  it('asks again when the question wording changed since the state was minted (bind-6)', async () => {
    const keys = await KeyRing.random();
    const ledger = new MemoryLedger();
    const before = await setup({ keys, store: ledger, wording: 'Delete the note' });
    const after = await setup({ keys, store: ledger, wording: 'Remove forever the note' });
    const c1 = await client(before.factory);
    const { state } = asked(await c1.call('delete_note', { title: 'groceries' }));
    const c2 = await client(after.factory);
    const reply = await c2.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state });
    const again = asked(reply);
    expect(again.message).toContain('Remove forever');
    expect(after.book.deleted).toEqual([]);
    // Control: the same state on a server with the same wording is honoured.
    const c3 = await client(before.factory);
    const own = await c3.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state });
    expect(own).toMatchObject({ kind: 'result', isError: false });
  });
});

describe('the state itself (refused by the SDK verify hook with -32602)', () => {
  const INVALID = { kind: 'error', code: -32602, message: 'Invalid or expired requestState' };

  it.each([
    ['a tampered ciphertext', (s: string) => tamper(s)],
    ['a garbage string', () => 'not-a-state'],
    ['a truncated state', (s: string) => s.slice(0, -5)],
    ['an over-long state', (s: string) => s + 'A'.repeat(20_000)],
  ])('refuses %s', async (_label, mutate) => {
    const { book, factory } = await setup();
    const c = await client(factory);
    const { state } = asked(await c.call('delete_note', { title: 'groceries' }));
    const reply = await c.call(
      'delete_note',
      { title: 'groceries' },
      { inputResponses: ACCEPT, requestState: mutate(state) },
    );
    expect(reply).toMatchObject(INVALID);
    expect(book.deleted).toEqual([]);
    // Control: the untouched state works.
    expect(
      await c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state }),
    ).toMatchObject({ kind: 'result', isError: false });
  });

  it('refuses a non-string requestState', async () => {
    const { factory } = await setup();
    const c = await client(factory);
    expect(
      await c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: 42 }),
    ).toMatchObject(INVALID);
  });

  it('refuses a state sealed under another key; the key ring opens it once that key is added', async () => {
    const ledger = new MemoryLedger();
    const other = KeyRing.generateSpec('other');
    const mine = KeyRing.generateSpec('mine');
    const minter = await setup({ keys: await KeyRing.fromSpecs([other]), store: ledger });
    const stranger = await setup({ keys: await KeyRing.fromSpecs([mine]), store: ledger });
    const friend = await setup({ keys: await KeyRing.fromSpecs([mine, other]), store: ledger });
    const { state } = asked(await (await client(minter.factory)).call('delete_note', { title: 'groceries' }));
    expect(
      await (
        await client(stranger.factory)
      ).call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state }),
    ).toMatchObject(INVALID);
    expect(stranger.book.deleted).toEqual([]);
    const ok = await (
      await client(friend.factory)
    ).call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state });
    expect(ok).toMatchObject({ kind: 'result', isError: false });
  });

  it('refuses a state from a server with another audience sharing the keys (bind-7, audience)', async () => {
    const keys = await KeyRing.random();
    const ledger = new MemoryLedger();
    const a = await setup({ keys, store: ledger, audience: 'files-a' });
    const b = await setup({ keys, store: ledger, audience: 'files-b' });
    const { state } = asked(await (await client(a.factory)).call('delete_note', { title: 'groceries' }));
    expect(
      await (
        await client(b.factory)
      ).call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state }),
    ).toMatchObject(INVALID);
    expect(b.book.deleted).toEqual([]);
    const own = await (
      await client(a.factory)
    ).call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state });
    expect(own).toMatchObject({ kind: 'result', isError: false });
  });

  it('refuses a state presented by another principal', async () => {
    let who = 'alice';
    const { book, factory } = await setup({ principal: () => who });
    const c = await client(factory);
    const { state } = asked(await c.call('delete_note', { title: 'groceries' }));
    who = 'mallory';
    expect(
      await c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state }),
    ).toMatchObject(INVALID);
    expect(book.deleted).toEqual([]);
    who = 'alice';
    expect(
      await c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state }),
    ).toMatchObject({ kind: 'result', isError: false });
  });

  it('refuses a state presented at exactly issue time + TTL, and accepts it one second earlier (bind-3)', async () => {
    let nowMs = 1_800_000_000_000;
    const t0 = nowMs;
    const { book, factory } = await setup({ ttlSeconds: 60, now: () => nowMs });
    const c = await client(factory);
    const late = asked(await c.call('delete_note', { title: 'groceries' }));
    nowMs = t0 + 60_000;
    expect(
      await c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: late.state }),
    ).toMatchObject(INVALID);
    expect(book.deleted).toEqual([]);
    nowMs = t0;
    const onTime = asked(await c.call('delete_note', { title: 'groceries' }));
    nowMs = t0 + 59_000;
    expect(
      await c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: onTime.state }),
    ).toMatchObject({ kind: 'result', isError: false });
  });

  it.each([0, -1, Infinity, NaN, 1.5, 86_401])(
    'throws at construction for a TTL of %s (bind-3)',
    async (ttlSeconds) => {
      await expect(createConfirmation({ ttlSeconds })).rejects.toThrow(RangeError);
    },
  );
});

describe('size', () => {
  it('refuses before asking, with ERR_CONFIRM_BAD_ARGUMENT, a call whose sealed state would be too large, and issues no jti', async () => {
    const ledger = new MemoryLedger();
    const confirmation = await createConfirmation({ store: ledger });
    const factory = () => {
      const server = new McpServer({ name: 'big', version: '0.0.0' }, { ...confirmation.serverOptions });
      confirmation.register(
        server,
        'huge',
        { inputSchema: NoteInput },
        {
          fingerprint: (args) => ({ blob: args.title.repeat(70_000) }),
          question: (args) => question`Delete ${args.title}?`,
          act: () => ({ content: [{ type: 'text', text: 'done' }] }),
        },
      );
      return server;
    };
    const c = await client(factory);
    const reply = await c.call('huge', { title: 'x' });
    expect(reply.kind === 'result' && reply.text.startsWith('[ERR_CONFIRM_BAD_ARGUMENT]')).toBe(true);
    expect(ledger.size).toBe(0);
    expect((await c.call('huge', { title: '' })).kind).toBe('input_required'); // control: a small one is asked
  });
});

describe('clients that cannot answer', () => {
  it('answers a 2026-07-28 client without the elicitation capability with -32021, data.requiredCapabilities and the sentence a 2025-era client gets; issues no jti', async () => {
    const ledger = new MemoryLedger();
    const { book, factory } = await setup({ store: ledger });
    const c = await client(factory, { elicitation: false });
    const reply = await c.call('delete_note', { title: 'groceries' });
    expect(reply).toEqual({
      kind: 'error',
      code: -32021,
      message: NO_ELICITATION_TEXT,
      data: { requiredCapabilities: { elicitation: { form: {} } } },
    });
    expect(ledger.size).toBe(0);
    expect(book.deleted).toEqual([]);
    // Control: the same call from a client that declares elicitation is asked.
    const asking = await client(factory);
    expect((await asking.call('delete_note', { title: 'groceries' })).kind).toBe('input_required');
  });

  it('a tool that calls a guard() handler, catches its -32021 refusal and answers a dry run keeps its own answer (no -32021 in its place); control: the registered tool on the same server still gets -32021', async () => {
    const confirmation = await createConfirmation({});
    const book = notebook();
    const factory = () => {
      const server = new McpServer({ name: 'notes', version: '0.0.0' }, { ...confirmation.serverOptions });
      register(confirmation, server, book);
      const inner = confirmation.guard<{ title: string }, null>(server, 'delete_note_inner', {
        question: (args) => question`Delete the note ${args.title}?`,
        act: (args) => {
          book.deleted.push(`inner:${args.title}`);
          return { content: [{ type: 'text', text: 'deleted' }] };
        },
      });
      server.registerTool('plan_delete', { inputSchema: NoteInput }, async (args, ctx) => {
        const r = await inner(args, ctx).catch((e: unknown) => ({
          content: [
            {
              type: 'text' as const,
              text: `dry run only: would delete ${args.title} (${(e as { code?: string }).code ?? 'refused'})`,
            },
          ],
        }));
        return r as never;
      });
      return server;
    };
    const c = await client(factory, { elicitation: false });
    const planned = await c.call('plan_delete', { title: 'groceries' });
    expect(planned).toMatchObject({
      kind: 'result',
      isError: false,
      text: 'dry run only: would delete groceries (-32021)',
    });
    // Control: the registered confirmation tool, where the refusal escapes, is the JSON-RPC -32021.
    expect(await c.call('delete_note', { title: 'groceries' })).toEqual({
      kind: 'error',
      code: -32021,
      message: NO_ELICITATION_TEXT,
      data: { requiredCapabilities: { elicitation: { form: {} } } },
    });
    // And a plan_delete after it is still its own answer (nothing left over from the earlier request).
    expect(await c.call('plan_delete', { title: 'diary' })).toMatchObject({
      kind: 'result',
      isError: false,
      text: 'dry run only: would delete diary (-32021)',
    });
    expect(book.deleted).toEqual([]);
  });

  it('tells a 2025-era v1 client without the elicitation capability the same sentence as an isError result', async () => {
    const { book, factory } = await setup();
    const legacy = await connectV1(factory);
    expect(await legacy.callTool('delete_note', { title: 'groceries' })).toEqual({
      text: NO_ELICITATION_TEXT,
      isError: true,
    });
    expect(book.deleted).toEqual([]);
    await legacy.close();
  });

  it('serves a 2025-era v1 client through the SDK legacy elicitation: accept acts, decline does not', async () => {
    const { book, factory } = await setup();
    const yes = await connectV1(factory, { answer: () => ({ action: 'accept', content: { confirmed: true } }) });
    const done = await yes.callTool('delete_note', { title: 'groceries' });
    expect(done).toEqual({ text: 'deleted note groceries', isError: false });
    expect(yes.asked).toHaveLength(1);
    expect(yes.asked[0]).toContain('groceries');
    const no = await connectV1(factory, { answer: () => ({ action: 'decline' }) });
    expect(await no.callTool('delete_note', { title: 'diary' })).toEqual({
      text: 'You declined; nothing was deleted.',
      isError: false,
    });
    expect(book.deleted).toEqual(['delete_note:groceries']);
    await yes.close();
    await no.close();
  });

  it('tells a 2025-era client without the elicitation capability so, with ERR_CONFIRM_NO_ELICITATION', async () => {
    const ledger = new MemoryLedger();
    const { book, factory } = await setup({ store: ledger });
    const v1 = await connectV1(factory);
    const r = await v1.callTool('delete_note', { title: 'groceries' });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/^\[ERR_CONFIRM_NO_ELICITATION\] /);
    expect(ledger.size).toBe(0);
    expect(book.deleted).toEqual([]);
    await v1.close();
  });
});

describe('a ledger that fails (spend-4)', () => {
  /** A memory store whose `spend` answers `spendAnswer()`. */
  const faultyLedger = (spendAnswer: () => Promise<SpendOutcome>): ConfirmStore => ({
    ...wrapStore(new MemoryLedger(), (_method, run) => run()),
    kind: 'faulty',
    shared: true,
    spend: () => spendAnswer(),
  });

  it.each([
    ['throws', () => Promise.reject(new Error('connection reset'))],
    ['answers null', () => Promise.resolve(null as unknown as SpendOutcome)],
    ['answers 0', () => Promise.resolve(0 as unknown as SpendOutcome)],
    ['answers false', () => Promise.resolve(false as unknown as SpendOutcome)],
    ['answers an unknown word', () => Promise.resolve('ok' as unknown as SpendOutcome)],
  ])('refuses with ERR_CONFIRM_LEDGER_UNAVAILABLE when spend %s, and never proceeds', async (_label, answer) => {
    const { book, factory } = await setup({ store: faultyLedger(answer) });
    const c = await client(factory);
    const { state } = asked(await c.call('delete_note', { title: 'groceries' }));
    const reply = await c.call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state });
    expect(reply.kind === 'result' && reply.text.startsWith('[ERR_CONFIRM_LEDGER_UNAVAILABLE]')).toBe(true);
    expect(book.deleted).toEqual([]);
  });

  it('refuses round 1 with ERR_CONFIRM_LEDGER_UNAVAILABLE when issue throws', async () => {
    const ledger: ConfirmStore = {
      ...wrapStore(new MemoryLedger(), (_method, run) => run()),
      kind: 'down',
      shared: true,
      issue: () => Promise.reject(new Error('ECONNREFUSED')),
      spend: () => Promise.resolve('unknown'),
    };
    const { factory } = await setup({ store: ledger });
    const c = await client(factory);
    const reply = await c.call('delete_note', { title: 'groceries' });
    expect(reply.kind === 'result' && reply.text.startsWith('[ERR_CONFIRM_LEDGER_UNAVAILABLE]')).toBe(true);
  });

  it('says the memory ledger is per process when a state is redeemed on another process (another ledger)', async () => {
    const keys = await KeyRing.random();
    // The command line's hint (unknownHint), which names its flags.
    const a = await setup({ keys, unknownHint: UNKNOWN_HINT });
    const b = await setup({ keys, unknownHint: UNKNOWN_HINT });
    const { state } = asked(await (await client(a.factory)).call('delete_note', { title: 'groceries' }));
    const reply = await (
      await client(b.factory)
    ).call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state });
    expect(reply.kind === 'result' && reply.text.startsWith('[ERR_CONFIRM_UNKNOWN]')).toBe(true);
    if (reply.kind === 'result') expect(reply.text).toContain('--ledger sqlite:PATH');
    expect(b.book.deleted).toEqual([]);
  });

  it('by default says the memory ledger is per process and names the shared stores, but no command-line flag; unknownHint: "" adds nothing; a shared store adds no hint', async () => {
    const keys = await KeyRing.random();
    const a = await setup({ keys });
    const b = await setup({ keys });
    const silent = await setup({ keys, unknownHint: '' });
    const shared = await setup({
      keys,
      store: { ...wrapStore(new MemoryLedger(), (_method, run) => run()), kind: 'shared', shared: true },
    });
    const { state } = asked(await (await client(a.factory)).call('delete_note', { title: 'groceries' }));
    const unknown =
      '[ERR_CONFIRM_UNKNOWN] This confirmation is not outstanding here (already used, expired and swept, or issued by another server process); nothing was done.';
    const reply = await (
      await client(b.factory)
    ).call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state });
    expect(reply).toMatchObject({
      kind: 'result',
      isError: true,
      text: `${unknown} This server keeps its ledger in process memory, so a confirmation asked by one server process cannot be redeemed on another: give every process the same keys and a shared ledger (SqliteLedger on one host, RedisLedger across hosts).`,
    });
    if (reply.kind === 'result') expect(reply.text).not.toContain('--');
    for (const other of [silent, shared]) {
      const again = await (
        await client(other.factory)
      ).call('delete_note', { title: 'groceries' }, { inputResponses: ACCEPT, requestState: state });
      expect(again).toMatchObject({ kind: 'result', isError: true, text: unknown });
    }
    expect([...b.book.deleted, ...silent.book.deleted, ...shared.book.deleted]).toEqual([]);
  });
});
