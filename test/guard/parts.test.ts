/**
 * The guard's parts alone: what the client can do (capabilities.ts), the one reader of its answer
 * (answer.ts) and the fail-closed store calls (storeCalls.ts). The flow that composes them is
 * tested through real clients in flow.test.ts and test/e2e.
 */
import type { ConfirmStore } from '../../src/store/confirmStore.js';
import {
  CLIENT_CAPABILITIES_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  type McpServer,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { CONFIRM_KEY, readAnswer } from '../../src/guard/answer.js';
import { clientCapabilities } from '../../src/guard/capabilities.js';
import { failClosed, spendRefusal, storeCalls } from '../../src/guard/storeCalls.js';
import { ConfirmCapacityError, ConfirmLedgerUnavailableError } from '../../src/errors.js';
import type { Ledger, SpendOutcome } from '../../src/store/ledger.js';

/** A server whose client declared `declared` in `initialize`, and a request context with `envelope`. */
function request(declared: unknown, envelope?: Record<string, unknown>): [McpServer, ServerContext] {
  const server = { server: { getClientCapabilities: () => declared } } as unknown as McpServer;
  const ctx = { mcpReq: { envelope } } as unknown as ServerContext;
  return [server, ctx];
}
/** A 2026-07-28 request whose envelope declares `capabilities`. */
const modern = (capabilities: unknown): Record<string, unknown> => ({
  [PROTOCOL_VERSION_META_KEY]: '2026-07-28',
  [CLIENT_CAPABILITIES_META_KEY]: capabilities,
});

describe('clientCapabilities', () => {
  it.each([
    ['no elicitation', {}, { form: false, url: false }],
    ['an empty elicitation (form implied)', { elicitation: {} }, { form: true, url: false }],
    ['form', { elicitation: { form: {} } }, { form: true, url: false }],
    ['url only', { elicitation: { url: {} } }, { form: false, url: true }],
    ['form and url', { elicitation: { form: {}, url: {} } }, { form: true, url: true }],
    ['elicitation null', { elicitation: null }, { form: false, url: false }],
    ['elicitation a string', { elicitation: 'yes' }, { form: false, url: false }],
    ['url not an object', { elicitation: { url: true } }, { form: false, url: false }],
    ['capabilities null', null, { form: false, url: false }],
  ])('reads %s the same in both eras', (_label, declared, can) => {
    expect(clientCapabilities(...request(declared))).toEqual({ era: 'legacy', ...can });
    // The 2026-07-28 request reads its own envelope, never what the server kept from initialize.
    expect(clientCapabilities(...request({ elicitation: { form: {}, url: {} } }, modern(declared)))).toEqual({
      era: 'modern',
      ...can,
    });
  });

  it('reads a stateless 2025-era request (nothing declared to this server) as able to do neither', () => {
    expect(clientCapabilities(...request(undefined))).toEqual({ era: 'legacy', form: false, url: false });
  });
});

describe('readAnswer', () => {
  const read = (entry: unknown, acceptWithoutContent = false) =>
    readAnswer(entry === undefined ? {} : { [CONFIRM_KEY]: entry }, {
      nothingDone: 'nothing was deleted',
      acceptWithoutContent,
    });

  it('confirms only an accept with confirmed === true (a boolean, an own key)', () => {
    expect(read({ action: 'accept', content: { confirmed: true } })).toEqual({ kind: 'confirmed' });
    for (const content of [
      { confirmed: 'true' },
      { confirmed: 1 },
      {},
      [true],
      Object.create({ confirmed: true }) as object,
    ]) {
      expect(read({ action: 'accept', content })).toEqual({
        kind: 'other',
        action: 'accept',
        sentence: 'You did not confirm; nothing was deleted.',
      });
    }
  });

  it('reads decline and cancel with their sentences, and any other answer as no valid confirmation', () => {
    expect(read({ action: 'decline' })).toEqual({
      kind: 'declined',
      action: 'decline',
      sentence: 'You declined; nothing was deleted.',
    });
    expect(read({ action: 'cancel', content: { confirmed: true } })).toEqual({
      kind: 'cancelled',
      action: 'cancel',
      sentence: 'You cancelled; nothing was deleted.',
    });
    expect(read({ roots: [] })).toEqual({
      kind: 'other',
      action: 'other',
      sentence: 'No valid confirmation was given; nothing was deleted.',
    });
  });

  it('reads no answer, an entry of no known shape, and an inherited entry as missing', () => {
    expect(readAnswer(undefined, { nothingDone: 'x' })).toEqual({ kind: 'missing' });
    expect(read(undefined)).toEqual({ kind: 'missing' });
    expect(read({ confirmed: true })).toEqual({ kind: 'missing' });
    const inherited = Object.create({ [CONFIRM_KEY]: { action: 'accept', content: { confirmed: true } } }) as Record<
      string,
      unknown
    >;
    expect(readAnswer(inherited, { nothingDone: 'x' })).toEqual({ kind: 'missing' });
  });

  it('confirms an accept without content only when asked to (passkey approval: the page decides)', () => {
    expect(read({ action: 'accept' })).toMatchObject({ kind: 'other', action: 'accept' });
    expect(read({ action: 'accept' }, true)).toEqual({ kind: 'confirmed' });
    expect(read({ action: 'accept', content: { confirmed: false } }, true)).toMatchObject({
      kind: 'other',
      action: 'accept',
    });
  });
});

describe('storeCalls', () => {
  // Only the ledger's part is called by these tests.
  const ledger = (spend: () => Promise<SpendOutcome>, shared = false): ConfirmStore =>
    ({
      kind: 'test',
      shared,
      issue: () => Promise.resolve(),
      spend,
    }) satisfies Ledger as unknown as ConfirmStore;

  it('passes a ConfirmError through and turns anything else into ERR_CONFIRM_LEDGER_UNAVAILABLE, with the cause', async () => {
    const capacity = new ConfirmCapacityError('total');
    await expect(failClosed(() => Promise.reject(capacity))).rejects.toBe(capacity);
    const down = new Error('ECONNREFUSED');
    const refusal = await failClosed(() => Promise.reject(down)).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(ConfirmLedgerUnavailableError);
    expect((refusal as Error).cause).toBe(down);
    // A synchronous throw as well.
    await expect(
      failClosed(() => {
        throw down;
      }),
    ).rejects.toBeInstanceOf(ConfirmLedgerUnavailableError);
    await expect(failClosed(() => Promise.resolve(7))).resolves.toBe(7);
  });

  it('maps each spend outcome to its refusal; only spent goes on, anything unknown fails closed', () => {
    expect(spendRefusal('spent', 'hint')).toBeUndefined();
    expect(spendRefusal('already-spent', 'hint')?.code).toBe('ERR_CONFIRM_SPENT');
    expect(spendRefusal('expired', 'hint')?.code).toBe('ERR_CONFIRM_EXPIRED');
    expect(spendRefusal('unknown', 'The hint.')?.message).toMatch(/nothing was done\. The hint\.$/);
    expect(spendRefusal('unknown', '')?.message).toMatch(/nothing was done\.$/);
    expect(spendRefusal('ok' as SpendOutcome, 'hint')?.code).toBe('ERR_CONFIRM_LEDGER_UNAVAILABLE');
  });

  it('adds the hint to ERR_CONFIRM_UNKNOWN only from a store that is not shared; release never rejects', async () => {
    await expect(
      storeCalls(
        ledger(() => Promise.resolve('unknown')),
        'The hint.',
      ).spend('j', 0),
    ).rejects.toThrow(/The hint\.$/);
    await expect(
      storeCalls(
        ledger(() => Promise.resolve('unknown'), true),
        'The hint.',
      ).spend('j', 0),
    ).rejects.toThrow(/nothing was done\.$/);
    await expect(
      storeCalls(
        ledger(() => Promise.resolve('spent')),
        '',
      ).spend('j', 0),
    ).resolves.toBeUndefined();
    await expect(
      storeCalls(
        ledger(() => Promise.reject(new Error('down'))),
        '',
      ).release('j', 0),
    ).resolves.toBeUndefined();
  });
});
