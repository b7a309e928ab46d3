/**
 * The command line of `mcp-confirm`: the usage, and the dispatcher. Every command has its own option
 * table (serving `delete_file` here with the serving flags of `servingArgs.ts`; `demo`, `keygen`;
 * `audit verify` in `auditArgs.ts`; `approvers enroll|list|remove` in `approversArgs.ts`; `grants list|revoke`
 * in `grantsArgs.ts`; `proxy` in `proxyArgs.ts`), so a flag of another command is refused by name, as an unknown one is.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import {
  DEFAULT_APPROVAL_WAIT_SECONDS,
  DEFAULT_AUDIENCE,
  DEFAULT_GRANT_MAX_SECONDS,
  DEFAULT_GRANT_MAX_USES,
  DEFAULT_TTL_SECONDS,
  MAX_TTL_SECONDS,
  MIN_GRANT_USES,
} from '../defaults.js';
import {
  EXIT_USAGE,
  parseFlags,
  UsageError,
  wholeSeconds,
  type ArgToken,
  type FlagValues,
  type OptionTable,
} from './common.js';
import { HTTP_USAGE } from './httpArgs.js';
import {
  AUDIT_USAGE,
  AUDIT_VERIFY_OPTIONS,
  auditVerifyForeign,
  parseAuditVerify,
  type AuditVerifyCommand,
} from './auditArgs.js';
import {
  APPROVERS_ENROLL_OPTIONS,
  APPROVERS_LIST_OPTIONS,
  APPROVERS_REMOVE_OPTIONS,
  approversForeign,
  parseApproversEnroll,
  parseApproversList,
  parseApproversRemove,
  type ApproversCommand,
} from './approversArgs.js';
import {
  GRANTS_LIST_OPTIONS,
  GRANTS_REVOKE_OPTIONS,
  GRANTS_USAGE,
  grantsForeign,
  parseGrantsList,
  parseGrantsRevoke,
  type GrantsCommand,
} from './grantsArgs.js';
import { parseServingFlags, SERVING_OPTIONS, type ServingFlags } from './servingArgs.js';
import { parseStoreInit, STORE_INIT_OPTIONS, STORE_USAGE, storeForeign, type StoreInitCommand } from './storeArgs.js';
import { parseProxyCommand, type ProxyCommand } from './proxyArgs.js';

export { EXIT_USAGE, UsageError };

export const USAGE = `Usage:
  mcp-confirm --root DIR [--root DIR ...] [--audience NAME] [--ttl SECONDS]
              [--key-file PATH] [--ledger memory|sqlite:PATH|redis://HOST:PORT[/DB]|postgres://HOST/DB]
              [--approval form|passkey] [--approvers PATH] [--approval-port PORT]
              [--approval-wait SECONDS] [--grants same-directory|subtree] [--grant-max-uses N]
              [--grant-max-seconds SECONDS] [--plans] [--approvers-required N]
              [--notify SPEC ... [--notify-secret-file PATH] [--notify-include-question]]
      Serve the confirmed delete_file tool over stdio (MCP 2026-07-28 and 2025-11-25).
  mcp-confirm --root DIR ... --http HOST:PORT [HTTP options] --approval passkey --approvers PATH
              --public-url URL [--approval-wait SECONDS]
      The same over Streamable HTTP, the approval page on the same listener at URL/approve/….
  mcp-confirm approvers enroll --approvers PATH --name NAME [--port PORT] [--timeout SECONDS] [--replace]
              [--public-url URL] [--principal ISS SUB ...] [--approvers-required N]
      Enrol a passkey: prints the enrolment page's URL (with a one-time secret) as the first line.
  mcp-confirm approvers list --approvers PATH
  mcp-confirm approvers remove --approvers PATH --name NAME
  mcp-confirm grants list --ledger sqlite:PATH|redis://HOST:PORT[/DB] [--audience NAME] [--json]
  mcp-confirm grants revoke ID --ledger sqlite:PATH|redis://HOST:PORT[/DB] [--audience NAME]
      List or revoke the live grants in the store servers share (see Grants below).
  mcp-confirm store init --ledger postgres://[USER@]HOST[:PORT]/DB
      Create the PostgreSQL store's tables (see Store below).
  mcp-confirm demo [--yes]
      Run the demo: a real server and client, a confirmed deletion, three refused attacks.
  mcp-confirm proxy [OPTIONS] [--] COMMAND [ARG ...]
      Put the confirmation in front of another MCP server (mcp-confirm proxy --help).
  mcp-confirm keygen [--kid ID] [--out FILE]
      Print a new key file ({"keys":[{"kid","k"}]}) with 32 random bytes to stdout, or write it
      to FILE with mode 0600 (never over an existing file; the directory must exist).

Options:
  --root DIR        A directory the server may delete files in (repeatable; the first is the
                    base of relative paths). Must exist, be a directory, not be a symbolic link.
  --audience NAME   The audience sealed in every requestState (1-200 characters, no { } or
                    control characters). Default: ${DEFAULT_AUDIENCE}.
  --ttl SECONDS     How long a question stays answerable, in whole seconds (1 to ${MAX_TTL_SECONDS}). Default: ${DEFAULT_TTL_SECONDS}.
  --key-file PATH   Key ring shared by replicas: {"keys":[{"kid":"k2","k":"<base64url 32 bytes>"}]};
                    the first key seals, every key opens. Default: one random key per process.
  --ledger SPEC     Where outstanding confirmations live: memory (default, one process),
                    sqlite:PATH (processes on one host), redis://HOST:PORT[/DB] (several hosts),
                    postgres://[USER@]HOST[:PORT]/DB[?sslmode=…&schema=NAME] (several hosts; the
                    password from PGPASSWORD or ~/.pgpass, never needed on the command line).
                    sqlite: needs the package better-sqlite3, redis: the package redis, postgres: the
                    package pg, installed next to mcp-confirm (npm install -g mcp-confirm better-sqlite3).
  --approval MODE   form (default: the client's yes is taken as given) or passkey (the human
                    approves on a local page with an enrolled passkey; needs --approvers).
  --approvers PATH  The approvers file (mcp-confirm approvers enroll). Mode 0600, outside every root.
  --approval-port PORT  (stdio) The approval page's port on 127.0.0.1 and ::1. Default: a random free port.
  --public-url URL  (--http with --approval passkey; approvers enroll) The origin browsers use for the
                    approval page (https://mcp.example.com): the WebAuthn origin; its host name is the
                    RP ID, and must be an allowed host (--resource's, --allowed-hosts or the bind's).
  --principal ISS SUB  (approvers enroll, repeatable) A token issuer and subject the approver may
                    approve for over --http with --auth-issuer. Default: local (stdio, or --http without tokens).
  --approval-wait SECONDS  How long a retry waits for the page's decision (0 to 3600). Default: ${DEFAULT_APPROVAL_WAIT_SECONDS}
                           (below the 60 s request timeout of the MCP SDKs' clients).
  --notify SPEC     (with --approval passkey; repeatable) Send each approval request and its outcome to
                    a channel: standard:URL (a signed Standard Webhooks event), slack:URL, ntfy:URL;
                    URL is https://… or $NAME (read from the environment: a channel URL is a secret).
                    The channel carries the page's link, never an approval; Deny then needs a passkey too.
  --notify-secret-file PATH  The Standard Webhooks secret (whsec_…) of standard: channels without their own
                    (standard;secret-file=PATH:URL).
  --notify-include-question  Send the rendered question too (default: the tool, server and link only).
  --approvers-required N  (--approval passkey; approvers enroll) A quorum: N distinct enrolled approvers
                    (1 to 16) must approve each call on the page; one Deny ends it. Fewer than N
                    approvers for a principal is a start-up error. For approvers enroll: enrolling
                    another approver needs N existing approvers' passkeys (kept in the file). Default: 1.
  --grants MATCHER  Offer a grant in each question: "this call, or calls like it, for a while".
                    same-directory: any file directly in the approved file's directory; subtree: in it
                    or below it (the directory pinned by device and inode). Default: no grants.
  --grant-max-uses N  (with --grants) Most deletions one grant allows, the approving one included
                    (2 to 1000000). Default: ${DEFAULT_GRANT_MAX_USES}.
  --grant-max-seconds SECONDS  (with --grants) How long a grant lasts (1 to 86400). Default: ${DEFAULT_GRANT_MAX_SECONDS}.
  --plans           Add the tool confirm_plan: an agent lists several deletions, the human approves them
                    with one question, and each listed call then runs once without another.
  --yes             (demo) Answer the confirmation with yes without asking.
  --version         Print the package version and exit.
  -h, --help        Show this help.

${HTTP_USAGE}

${AUDIT_USAGE}

${GRANTS_USAGE}

${STORE_USAGE}`;

/** `mcp-confirm --root DIR …`: serve `delete_file`. */
export interface ServeCommand extends ServingFlags {
  kind: 'serve';
  roots: string[];
  /** `--grants` and its bounds, as a grant policy for `delete_file` (undefined: no grants). */
  grant: { arguments: { path: 'same-directory' | 'subtree' }; maxUses: number; maxSeconds: number } | undefined;
  /** `--plans`: register `confirm_plan`. */
  plans: boolean;
}

/** What the command line asks for. */
export type Command =
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'demo'; yes: boolean }
  | { kind: 'keygen'; kid: string; out: string | undefined }
  | AuditVerifyCommand
  | ApproversCommand
  | GrantsCommand
  | StoreInitCommand
  | ServeCommand
  | ProxyCommand;

/** `--help` and `--version`: taken by every command but `proxy`, and answered before anything else is checked. */
const GLOBAL_OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

/** The option table of serving `delete_file`: `--root` and the serving flags. */
const SERVE_OPTIONS = {
  root: { type: 'string', multiple: true },
  grants: { type: 'string' },
  'grant-max-uses': { type: 'string' },
  'grant-max-seconds': { type: 'string' },
  plans: { type: 'boolean' },
  ...SERVING_OPTIONS,
} as const;

/**
 * `--grants`, `--grant-max-uses`, `--grant-max-seconds`: the grant policy of `delete_file`.
 *
 * @throws {UsageError} naming the flag: an unknown matcher, a bound that is not a whole number in
 *   range, or a bound without `--grants`.
 */
function parseGrantFlags(values: {
  grants?: string | undefined;
  'grant-max-uses'?: string | undefined;
  'grant-max-seconds'?: string | undefined;
}): ServeCommand['grant'] {
  const matcher = values.grants;
  if (matcher === undefined) {
    for (const flag of ['grant-max-uses', 'grant-max-seconds'] as const)
      if (values[flag] !== undefined) throw new UsageError(`--${flag} needs --grants same-directory|subtree`);
    return undefined;
  }
  if (matcher !== 'same-directory' && matcher !== 'subtree')
    throw new UsageError(`--grants must be same-directory or subtree, got ${JSON.stringify(matcher)}`);
  const uses = values['grant-max-uses'];
  let maxUses = DEFAULT_GRANT_MAX_USES;
  if (uses !== undefined) {
    maxUses = /^[0-9]+$/.test(uses) ? Number(uses) : Number.NaN;
    if (!Number.isSafeInteger(maxUses) || maxUses < 1 || maxUses > 1_000_000)
      throw new UsageError(`--grant-max-uses must be a whole number from 1 to 1000000, got ${JSON.stringify(uses)}`);
    if (maxUses < MIN_GRANT_USES)
      throw new UsageError(
        `--grant-max-uses must be at least ${MIN_GRANT_USES}, got ${JSON.stringify(uses)} (the approving deletion is a grant's first use, so a grant of 1 would allow no other deletion)`,
      );
  }
  const seconds = values['grant-max-seconds'];
  const maxSeconds = seconds === undefined ? DEFAULT_GRANT_MAX_SECONDS : wholeSeconds('--grant-max-seconds', seconds);
  return { arguments: { path: matcher }, maxUses, maxSeconds };
}
const DEMO_OPTIONS = { yes: { type: 'boolean' } } as const;
const KEYGEN_OPTIONS = { kid: { type: 'string' }, out: { type: 'string' } } as const;

/**
 * Where a flag of another command belongs, for the refusals that name it (serving `delete_file`
 * refuses every flag of another command this way); undefined for the serving flags.
 */
function belongsTo(flag: string): string | undefined {
  if (flag === 'yes') return '--yes belongs to the demo command';
  if (flag === 'kid' || flag === 'out') return `--${flag} belongs to the keygen command`;
  if (flag === 'json') return '--json belongs to grants list';
  if (Object.hasOwn(APPROVERS_ENROLL_OPTIONS, flag) && flag !== 'approvers' && flag !== 'public-url')
    return `--${flag} belongs to approvers enroll`;
  return undefined;
}

/**
 * One command: its option table, the message for a flag it does not take, and its parser, given
 * its flags, the words after its name, and the `--principal ISS SUB` pairs.
 */
interface CommandSpec<O extends OptionTable> {
  options: O;
  /** How many words may follow the command's name. */
  words: number;
  foreign(flag: string): string | undefined;
  parse(values: FlagValues<O>, words: string[], principals: Array<[string, string]>): Command;
}

function command<O extends OptionTable>(spec: CommandSpec<O>): CommandSpec<OptionTable> {
  return spec as unknown as CommandSpec<OptionTable>;
}

/** Serving `delete_file`: the command named by no word. */
const SERVE = command({
  options: SERVE_OPTIONS,
  words: 0,
  foreign: belongsTo,
  parse: (values) => {
    const roots = values.root ?? [];
    if (roots.length === 0) throw new UsageError('at least one --root DIR is required');
    return {
      kind: 'serve',
      roots,
      ...parseServingFlags(values),
      grant: parseGrantFlags(values),
      plans: values.plans ?? false,
    };
  },
});

/** The commands named by one word. */
const COMMANDS = new Map<string, CommandSpec<OptionTable>>([
  [
    'demo',
    command({
      options: DEMO_OPTIONS,
      words: 0,
      foreign: (flag) => (flag === 'kid' || flag === 'out' ? undefined : belongsTo(flag)) ?? 'demo takes only --yes',
      parse: (values) => ({ kind: 'demo', yes: values.yes ?? false }),
    }),
  ],
  [
    'keygen',
    command({
      options: KEYGEN_OPTIONS,
      words: 0,
      foreign: (flag) => (flag === 'yes' ? undefined : belongsTo(flag)) ?? 'keygen takes only --kid and --out',
      parse: (values) => {
        const kid = values.kid ?? `k${new Date().toISOString().slice(0, 10).replaceAll('-', '')}`;
        if (!/^[A-Za-z0-9._-]{1,64}$/.test(kid))
          throw new UsageError(`--kid must be 1-64 characters of A-Z a-z 0-9 . _ -, got ${JSON.stringify(kid)}`);
        const out = values.out;
        if (out === '') throw new UsageError('--out needs a file path');
        return { kind: 'keygen', kid, out };
      },
    }),
  ],
]);

/** The commands named by two words, by their first, with the refusal for a missing or unknown second word. */
const FAMILIES = new Map<
  string,
  { commands: Map<string, CommandSpec<OptionTable>>; refusal: (action: string | undefined) => string }
>([
  [
    'audit',
    {
      commands: new Map([
        [
          'verify',
          command({ options: AUDIT_VERIFY_OPTIONS, words: 1, foreign: auditVerifyForeign, parse: parseAuditVerify }),
        ],
      ]),
      refusal: (action) =>
        action === undefined
          ? 'audit needs a command: audit verify FILE --key-file PATH'
          : `unknown audit command: ${action}`,
    },
  ],
  [
    'approvers',
    {
      commands: new Map([
        [
          'enroll',
          command({
            options: APPROVERS_ENROLL_OPTIONS,
            words: 0,
            foreign: approversForeign('enroll'),
            parse: (values, _words, principals) => parseApproversEnroll(values, principals),
          }),
        ],
        [
          'list',
          command({
            options: APPROVERS_LIST_OPTIONS,
            words: 0,
            foreign: approversForeign('list'),
            parse: parseApproversList,
          }),
        ],
        [
          'remove',
          command({
            options: APPROVERS_REMOVE_OPTIONS,
            words: 0,
            foreign: approversForeign('remove'),
            parse: parseApproversRemove,
          }),
        ],
      ]),
      refusal: () => 'approvers takes enroll, list or remove',
    },
  ],
  [
    'grants',
    {
      commands: new Map([
        [
          'list',
          command({ options: GRANTS_LIST_OPTIONS, words: 0, foreign: grantsForeign('list'), parse: parseGrantsList }),
        ],
        [
          'revoke',
          command({
            options: GRANTS_REVOKE_OPTIONS,
            words: 1,
            foreign: grantsForeign('revoke'),
            parse: parseGrantsRevoke,
          }),
        ],
      ]),
      refusal: (action) =>
        action === undefined
          ? 'grants needs a command: grants list --ledger SPEC, or grants revoke ID --ledger SPEC'
          : `unknown grants command: ${action} (grants takes list or revoke)`,
    },
  ],
  [
    'store',
    {
      commands: new Map([
        ['init', command({ options: STORE_INIT_OPTIONS, words: 0, foreign: storeForeign, parse: parseStoreInit })],
      ]),
      refusal: (action) =>
        action === undefined
          ? 'store needs a command: store init --ledger postgres://HOST/DB'
          : `unknown store command: ${action} (store takes init)`,
    },
  ],
]);

/** Every flag of every command but `proxy`: read first, so that an unknown flag is named as such before a flag of another command. */
const ALL_OPTIONS: OptionTable = Object.assign(
  {},
  GLOBAL_OPTIONS,
  SERVE.options,
  ...[...COMMANDS.values(), ...[...FAMILIES.values()].flatMap((f) => [...f.commands.values()])].map((c) => c.options),
);

/**
 * The words of the command line, without the SUB of each `--principal ISS SUB` (`parseArgs` gives
 * ISS as the option's value; SUB is the positional right after it), and those pairs.
 *
 * @throws {UsageError} for a `--principal` without its SUB.
 */
function wordsAndPrincipals(tokens: readonly ArgToken[]): { words: string[]; principals: Array<[string, string]> } {
  const principals: Array<[string, string]> = [];
  const consumed = new Set<number>();
  for (const t of tokens) {
    if (t.kind !== 'option' || t.name !== 'principal') continue;
    const subIndex = t.inlineValue ? t.index + 1 : t.index + 2;
    const sub = tokens.find((u) => u.kind === 'positional' && u.index === subIndex);
    if (sub === undefined || sub.kind !== 'positional' || t.value === undefined)
      throw new UsageError('--principal takes two values: the token issuer and subject (--principal ISS SUB)');
    consumed.add(subIndex);
    principals.push([t.value, sub.value]);
  }
  const words = tokens.flatMap((t) => (t.kind === 'positional' && !consumed.has(t.index) ? [t.value] : []));
  return { words, principals };
}

/** A grant id as the stores accept them: 22 base64url characters, the first of which may be `-`. */
const DASHED_GRANT_ID = /^-[A-Za-z0-9_-]{21}$/;

/**
 * `grants revoke ID` with an ID that starts with `-` (1 in 64 random ids does): `parseArgs` would
 * read it as options (`-a -b …`) and refuse it. Such a word, in a command line whose first two
 * words are `grants revoke`, is moved after a `--` (where every word is a positional), unless it
 * comes after `--` already, is the value of the option before it (`--audience -x…`, refused by
 * `parseArgs` as ambiguous, as before), or names an option. Nothing else changes: `--` before
 * the ID works as in any command.
 */
function idsAsWords(argv: readonly string[]): readonly string[] {
  let loose: ArgToken[];
  try {
    loose = parseArgs({
      args: [...argv],
      options: ALL_OPTIONS,
      strict: false,
      allowPositionals: true,
      tokens: true,
    }).tokens;
  } catch {
    return argv;
  }
  // parseArgs spreads a dashed word over tokens of the same index (`-a -b …`; a `-` inside it makes
  // a `--` of its own, and the rest positionals): only a token that is its whole word counts here.
  const words = loose.flatMap((t) => (t.kind === 'positional' && argv[t.index] === t.value ? [t.value] : []));
  if (words[0] !== 'grants' || words[1] !== 'revoke') return argv;
  const end = loose.find((t) => t.kind === 'option-terminator' && argv[t.index] === '--')?.index ?? argv.length;
  const moved = new Set<number>();
  for (let i = 0; i < end; i++) {
    const word = argv[i]!;
    if (!DASHED_GRANT_ID.test(word) || Object.hasOwn(ALL_OPTIONS, word.replace(/^--?/, ''))) continue;
    // Read as options of its own (not as the value of the option before it).
    if (loose.some((t) => t.index === i && t.kind === 'option')) moved.add(i);
  }
  if (moved.size === 0) return argv;
  const kept = argv.filter((_, i) => !moved.has(i));
  const ids = [...moved].map((i) => argv[i]!);
  const at = kept.indexOf('--', end - moved.size);
  return at === -1 ? [...kept, '--', ...ids] : [...kept.slice(0, at + 1), ...ids, ...kept.slice(at + 1)];
}

/**
 * Parses `argv` (without the node and script paths): `proxy …` by its own parser
 * ({@link parseProxyCommand}: the upstream command follows its options); any other command line
 * first against every command's flags (an unknown flag, a missing value), then `--help` and
 * `--version`, then the command its words name, strictly against that command's own table (a flag
 * of another command is refused by name), then its words and values.
 *
 * @throws {UsageError} on unknown options, a flag of another command, missing `--root`, or a bad value.
 */
export function parseCommand(argv: readonly string[]): Command {
  if (argv[0] === 'proxy') return parseProxyCommand(argv.slice(1));
  argv = idsAsWords(argv);
  const { values, tokens } = parseFlags(argv, ALL_OPTIONS);
  const { words, principals } = wordsAndPrincipals(tokens);
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  const [first, second] = words;
  let spec = SERVE;
  let after: string[] = [];
  if (first !== undefined) {
    const family = FAMILIES.get(first);
    const found = family ? (second === undefined ? undefined : family.commands.get(second)) : COMMANDS.get(first);
    if (found === undefined) throw new UsageError(family ? family.refusal(second) : `unknown command: ${first}`);
    spec = found;
    after = words.slice(family ? 2 : 1);
  }
  const { values: own } = parseFlags(argv, { ...GLOBAL_OPTIONS, ...spec.options }, spec.foreign);
  if (after.length > spec.words) throw new UsageError(`unexpected argument: ${after[spec.words]}`);
  return spec.parse(own, after, principals);
}
