/**
 * A library tool's own refusals (`refuse(code, sentence)`), through a real v2 client pinned to
 * 2026-07-28 over `serveStdio` (in-memory transport), rounds driven by hand: a `transfer_money`
 * tool refuses an unknown account in round 1 (nothing asked) and insufficient funds in round 2
 * (confirmed, nothing transferred), answered exactly like the package's own refusals.
 */
import { McpServer } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfirmError,
  createConfirmation,
  question,
  refuse,
  ToolRefusalError,
  toToolError,
  type AuditDecision,
  type ConfirmEvent,
} from 'mcp-confirm';
import { ACCEPT, asked, connect, type Connected } from '../helpers/harness.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

/** A bank of accounts, balances in cents, with a confirmed `transfer_money` tool (and `confirm_plan`). */
async function bank(balances: Record<string, number>): Promise<{
  c: Connected;
  balances: Record<string, number>;
  events: ConfirmEvent[];
  audit: AuditDecision[];
}> {
  const events: ConfirmEvent[] = [];
  const audit: AuditDecision[] = [];
  const confirmation = await createConfirmation({
    audience: 'bank',
    plans: true,
    onEvent: (e) => events.push(e),
    audit: { record: async (d) => void audit.push(d), countStateRefused: () => {} },
  });
  const factory = () => {
    const server = new McpServer({ name: 'bank', version: '1.0.0' }, { ...confirmation.serverOptions });
    confirmation.register(
      server,
      'transfer_money',
      {
        inputSchema: z.strictObject({ from: z.string(), to: z.string(), amountCents: z.number().int().positive() }),
        annotations: { destructiveHint: true },
      },
      {
        fingerprint: (args) => {
          if (!(args.from in balances) || !(args.to in balances))
            refuse('ERR_TRANSFER_ACCOUNT', 'No such account; nothing was asked and nothing was transferred.');
          return null;
        },
        question: (args) => question`Transfer ${String(args.amountCents)} cents from ${args.from} to ${args.to}?`,
        act: (args) => {
          if (balances[args.from]! < args.amountCents)
            refuse('ERR_TRANSFER_FUNDS', 'Insufficient funds; nothing was transferred.');
          balances[args.from]! -= args.amountCents;
          balances[args.to]! += args.amountCents;
          return { content: [{ type: 'text', text: `Transferred ${args.amountCents} cents.` }] };
        },
        nothingDone: 'nothing was transferred',
      },
    );
    return server;
  };
  const c = await connect(factory);
  cleanups.push(() => c.close());
  return { c, balances, events, audit };
}

describe('refuse(code, sentence): a tool refuses with its own code', () => {
  it('refuses an unknown account in round 1 with [ERR_TRANSFER_ACCOUNT], asking nothing', async () => {
    const { c, balances, events, audit } = await bank({ alice: 500, bob: 0 });
    const reply = await c.call('transfer_money', { from: 'alice', to: 'mallory', amountCents: 100 });
    expect(reply).toMatchObject({
      kind: 'result',
      isError: true,
      text: '[ERR_TRANSFER_ACCOUNT] No such account; nothing was asked and nothing was transferred.',
    });
    expect(balances).toEqual({ alice: 500, bob: 0 });
    expect(events).toEqual([{ type: 'refused', tool: 'transfer_money', code: 'ERR_TRANSFER_ACCOUNT' }]);
    expect(audit.map((d) => [d.event, d.code])).toEqual([['refused', 'ERR_TRANSFER_ACCOUNT']]);
    // Control: a known account is asked.
    asked(await c.call('transfer_money', { from: 'alice', to: 'bob', amountCents: 100 }));
  });

  it('refuses insufficient funds in round 2 with [ERR_TRANSFER_FUNDS] after the confirmation, transferring nothing', async () => {
    const { c, balances, events, audit } = await bank({ alice: 500, bob: 0 });
    const args = { from: 'alice', to: 'bob', amountCents: 400 };
    const first = asked(await c.call('transfer_money', args));
    // Alice spends money elsewhere between the question and the answer.
    balances.alice = 300;
    const reply = await c.call('transfer_money', args, { inputResponses: ACCEPT, requestState: first.state });
    expect(reply).toMatchObject({
      kind: 'result',
      isError: true,
      text: '[ERR_TRANSFER_FUNDS] Insufficient funds; nothing was transferred.',
    });
    expect(balances).toEqual({ alice: 300, bob: 0 });
    expect(events.map((e) => e.type)).toEqual(['asked', 'refused']);
    expect(events[1]).toEqual({ type: 'refused', tool: 'transfer_money', code: 'ERR_TRANSFER_FUNDS' });
    // The action was refused after the confirmation: a "failed" line with the tool's code, no second line.
    expect(audit.map((d) => [d.event, d.code])).toEqual([
      ['asked', null],
      ['confirmed', null],
      ['failed', 'ERR_TRANSFER_FUNDS'],
    ]);
    // Control: with the funds there, the same confirmed call transfers.
    const again = asked(await c.call('transfer_money', { ...args, amountCents: 300 }));
    const done = await c.call(
      'transfer_money',
      { ...args, amountCents: 300 },
      { inputResponses: ACCEPT, requestState: again.state },
    );
    expect(done).toMatchObject({ kind: 'result', isError: false, text: 'Transferred 300 cents.' });
    expect(balances).toEqual({ alice: 0, bob: 300 });
  });

  it("carries a planned call's round-1 refusal inside ERR_CONFIRM_PLAN, approving nothing", async () => {
    const { c, balances } = await bank({ alice: 500, bob: 0 });
    const reply = await c.call('confirm_plan', {
      calls: [
        { tool: 'transfer_money', arguments: { from: 'alice', to: 'bob', amountCents: 1 } },
        { tool: 'transfer_money', arguments: { from: 'alice', to: 'nobody', amountCents: 1 } },
      ],
    });
    expect(reply.kind).toBe('result');
    if (reply.kind !== 'result') return;
    expect(reply.isError).toBe(true);
    expect(reply.text).toMatch(
      /^\[ERR_CONFIRM_PLAN\] Call 2 \(.*transfer_money.*\) was refused: \[ERR_TRANSFER_ACCOUNT\] /,
    );
    expect(balances).toEqual({ alice: 500, bob: 0 });
    // Control: a plan of known accounts is asked.
    asked(
      await c.call('confirm_plan', {
        calls: [{ tool: 'transfer_money', arguments: { from: 'alice', to: 'bob', amountCents: 1 } }],
      }),
    );
  });

  it('answers a tool that tries to refuse with an ERR_CONFIRM_* code with the internal error, never that code', async () => {
    const events: ConfirmEvent[] = [];
    const confirmation = await createConfirmation({ onEvent: (e) => events.push(e) });
    const c = await connect(() => {
      const server = new McpServer({ name: 'forger', version: '1.0.0' }, { ...confirmation.serverOptions });
      confirmation.register(
        server,
        'forge',
        { inputSchema: z.strictObject({ code: z.string() }) },
        {
          fingerprint: (args) => refuse(args.code as never, 'This confirmation was already used; nothing was done.'),
          question: () => 'never asked',
          act: () => ({ content: [] }),
        },
      );
      return server;
    });
    cleanups.push(() => c.close());
    const forged = await c.call('forge', { code: 'ERR_CONFIRM_SPENT' });
    expect(forged).toMatchObject({
      kind: 'result',
      isError: true,
      text: 'Internal error in the confirmation layer; nothing was done.',
    });
    expect(events.map((e) => e.type)).toEqual(['internal-error']);
    // Control: the same tool with a code of its own is answered with it.
    const own = await c.call('forge', { code: 'ERR_FORGE_OWN' });
    expect(own).toMatchObject({
      kind: 'result',
      isError: true,
      text: '[ERR_FORGE_OWN] This confirmation was already used; nothing was done.',
    });
  });
});

describe('refuse: codes that could pass for the package own are a TypeError', () => {
  it.each([
    ['ERR_CONFIRM_SPENT', 'starts with ERR_CONFIRM_'],
    ['ERR_CONFIRM_', 'starts with ERR_CONFIRM_'],
    ['err_transfer', 'lower case'],
    ['ERR_', 'nothing after ERR_'],
    ['ERR_TRANSFER-FUNDS', 'a hyphen'],
    ['TRANSFER_FUNDS', 'no ERR_ prefix'],
    [' ERR_TRANSFER', 'a leading space'],
    ['ERR_TRANSFER\n', 'a trailing newline'],
  ])('refuses the code %j (%s) with a TypeError, not a refusal', (code, _why) => {
    let thrown: unknown;
    try {
      refuse(code as never, 'Insufficient funds.');
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(TypeError);
    expect(thrown).not.toBeInstanceOf(ToolRefusalError);
    expect(String((thrown as Error).message)).toMatch(code.startsWith('ERR_CONFIRM_') ? /ERR_CONFIRM_/ : /\^ERR_/);
  });

  it.each([[''], ['   '], ['\ud800 lone surrogate']])('refuses the sentence %j with a TypeError', (sentence) => {
    expect(() => refuse('ERR_TRANSFER_FUNDS', sentence)).toThrow(TypeError);
    expect(() => new ToolRefusalError('ERR_TRANSFER_FUNDS', sentence)).toThrow(TypeError);
  });

  it('throws a ToolRefusalError (not a ConfirmError) for a good code, which toToolError answers as [CODE] sentence', () => {
    let thrown: unknown;
    try {
      refuse('ERR_TRANSFER_FUNDS_2', 'Insufficient funds.');
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(ToolRefusalError);
    expect(thrown).not.toBeInstanceOf(ConfirmError);
    // The type says so too: a literal ERR_CONFIRM_* code does not compile (and throws a TypeError).
    // @ts-expect-error the package's own codes are not a tool's
    expect(() => refuse('ERR_CONFIRM_SPENT', 'x')).toThrow(TypeError);
    expect((thrown as ToolRefusalError).code).toBe('ERR_TRANSFER_FUNDS_2');
    expect(toToolError(thrown)).toEqual({
      content: [{ type: 'text', text: '[ERR_TRANSFER_FUNDS_2] Insufficient funds.' }],
      isError: true,
    });
  });
});
