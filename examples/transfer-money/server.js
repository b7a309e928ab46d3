// A bank MCP server over stdio: its tool transfer_money moves money only after the human said yes.
// The confirmation is sealed, bound to these exact arguments and spent once in a SQLite ledger.
import { fileURLToPath } from 'node:url';
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { ChangedBeforeActingError, createConfirmation, question, refuse } from 'mcp-confirm';
import { SqliteLedger } from 'mcp-confirm/stores/sqlite';

// The accounts and their balances in cents: a stand-in for your database.
const balances = new Map([
  ['alice', 10_000],
  ['bob', 2_500],
]);

const euros = (cents) => `${(cents / 100).toFixed(2)} EUR`;

// Once per process, outside the factory below (which runs for every connection).
const confirmation = await createConfirmation({
  audience: 'bank-example',
  ttlSeconds: 120,
  // Every server process opening this file shares it: a confirmation is spent once among them.
  store: new SqliteLedger({ path: fileURLToPath(new URL('./ledger.db', import.meta.url)) }),
});

serveStdio(() => {
  const server = new McpServer({ name: 'bank-example', version: '1.0.0' }, { ...confirmation.serverOptions });
  confirmation.register(
    server,
    'transfer_money',
    {
      description: 'Transfer money from one account to another. The human is asked first.',
      inputSchema: z.strictObject({ from: z.string(), to: z.string(), amountCents: z.number().int().positive() }),
      annotations: { destructiveHint: true, idempotentHint: false },
    },
    {
      // Round 1, before asking: refuse what cannot be done, and remember the balance the human is shown.
      fingerprint: ({ from, to, amountCents }) => {
        if (!balances.has(from) || !balances.has(to) || from === to) {
          refuse('ERR_TRANSFER_ACCOUNTS', 'from and to must be two different known accounts');
        }
        if (balances.get(from) < amountCents) refuse('ERR_TRANSFER_FUNDS', 'insufficient funds');
        return { balance: balances.get(from) };
      },
      // What the human reads; values are rendered so that an account name cannot forge the text.
      question: ({ from, to, amountCents }, { balance }) =>
        question`Transfer ${euros(amountCents)} from ${from} (balance ${euros(balance)}) to ${to}?`,
      // Round 2, after an accepted, matching, unspent confirmation: check again, then act.
      act: ({ from, to, amountCents }, { fingerprint }) => {
        // The balance moved since the human was asked: ask again with the new one.
        if (balances.get(from) !== fingerprint.balance) throw new ChangedBeforeActingError();
        balances.set(from, balances.get(from) - amountCents);
        balances.set(to, balances.get(to) + amountCents);
        const text = `Transferred ${euros(amountCents)} from ${from} to ${to}; ${from} now has ${euros(balances.get(from))}.`;
        return { content: [{ type: 'text', text }] };
      },
      nothingDone: 'nothing was transferred',
    },
  );
  return server;
});
