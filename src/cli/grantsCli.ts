/**
 * `mcp-confirm grants list|revoke`: the live grants of a shared store (`--ledger sqlite:PATH` or
 * `redis://…`), for the operators of the servers that share it. The listing is the output of
 * `list` (stdout); everything else goes to stderr. Loaded only for these commands.
 *
 * Every text field of a grant (tool, principal tag, approver, audience, summary) is shown through
 * the renderer (`renderValue`): one line, control and bidi characters visible as escapes, so a
 * field cannot forge another line or field of the listing. `--json` output is ASCII: every other
 * character is a `\u` escape, so it parses to the same records and cannot reorder a terminal.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { DEFAULT_AUDIENCE } from '../defaults.js';
import { ConfirmLedgerUnavailableError } from '../errors.js';
import { renderValue, renderValueParts } from '../prompt/render.js';
import type { ConfirmStore } from '../store/confirmStore.js';
import { MAX_GRANT_TEXT_LENGTH, type Grant } from '../store/grantStore.js';
import type { AuditLog } from '../audit/auditLog.js';
import type { Ledger } from '../store/ledger.js';
import { EXIT_USAGE, readKeyFile, UsageError } from './common.js';
import type { GrantsCommand } from './grantsArgs.js';
import { isPostgresSpec, openLedger, postgresSpec, redisUrl, shownLedger } from './ledgerSpec.js';

const err = (line: string): void => void process.stderr.write(`mcp-confirm: ${line}\n`);

/** A grant id as the stores make them. */
const GRANT_ID = /^[A-Za-z0-9_-]{22}$/;

/** A Unix time in milliseconds as ISO 8601 UTC, or `N ms` when no date can show it. */
function isoTime(ms: number): string {
  const date = new Date(ms);
  return Number.isFinite(date.getTime()) ? date.toISOString() : `${ms} ms`;
}

/** What is left until `expiresAtMs`: `14 minutes left`, `1 minute left`, `under a minute left`. */
function timeLeft(expiresAtMs: number, nowMs: number): string {
  const minutes = Math.floor((expiresAtMs - nowMs) / 60_000);
  return minutes < 1 ? 'under a minute left' : `${minutes} minute${minutes === 1 ? '' : 's'} left`;
}

/**
 * What a grant is bound to, as `grants list` shows it. The guard writes a binding as the JSON
 * array `[PROCESS, TOOL]`: PROCESS the serving process over stdio (`pid N, started TIME, ID`),
 * `''` over HTTP; TOOL the tool's own binding (for the proxy, the digest of the upstream and the
 * tool's definition), `''` when none. So: `serving process \`pid 4242, started …, …\``, or `any
 * serving process` (HTTP), followed by `, tool binding \`…\`` when the tool binds one; any other
 * text is shown as `binding \`…\`` (`no binding` when empty). Values are rendered as every field.
 */
export function bindingText(binding: string): string {
  const v = (value: string): string => renderValue(value);
  let parts: unknown;
  try {
    parts = JSON.parse(binding);
  } catch {
    parts = undefined;
  }
  if (Array.isArray(parts) && parts.length === 2 && parts.every((p) => typeof p === 'string')) {
    const [proc, own] = parts as [string, string];
    const where = proc === '' ? 'any serving process' : `serving process ${v(proc)}`;
    return own === '' ? where : `${where}, tool binding ${v(own)}`;
  }
  return binding === '' ? 'no binding' : `binding ${v(binding)}`;
}

/**
 * One grant as one line of `grants list`, its fields separated by tabs (the renderer shows a tab
 * inside a value as an escape, so the fields cannot be shifted): the id, tool, principal tag, what
 * it is bound to ({@link bindingText}: over stdio the serving process), approver, uses left of
 * `maxUses`, expiry (ISO time and minutes left), creation, audience and summary. The summary is
 * shown whole (at most {@link MAX_GRANT_TEXT_LENGTH} graphemes).
 */
export function grantLine(grant: Grant, nowMs: number): string {
  const v = (value: string): string => renderValue(value);
  return [
    GRANT_ID.test(grant.id) ? grant.id : v(grant.id),
    `tool ${v(grant.tool)}`,
    `principal tag ${v(grant.principal)}`,
    `bound to ${bindingText(grant.binding)}`,
    `approver ${v(grant.approver)}`,
    `uses left ${grant.usesLeft} of ${grant.maxUses}`,
    `expires ${isoTime(grant.expiresAtMs)} (${timeLeft(grant.expiresAtMs, nowMs)})`,
    `created ${isoTime(grant.createdAtMs)}`,
    `audience ${v(grant.audience)}`,
    `summary ${summaryText(grant.summary)}`,
  ].join('\t');
}

/**
 * A grant's summary as `grants list` shows it: the offer's line as the question showed it, whose
 * values are code spans. Without a backtick, or when it has to be cut, it is rendered as every
 * field is (`renderValue`: a code span, the backtick escaped as `⟨U+0060⟩`). Otherwise its
 * backticks are kept, so its code spans stay readable, and everything between them is escaped as
 * `renderValue` escapes a value (line breaks, tabs, control and bidi characters visible, on one
 * line); the whole is fenced by a run of backticks longer than any inside it (a CommonMark code span
 * its text cannot close), e.g. ``` `` Or allow: delete any file directly in `/srv/cache/` … `` ```,
 * with the warnings `renderValue` would add for the whole.
 */
export function summaryText(summary: string): string {
  const options = { maxGraphemes: MAX_GRANT_TEXT_LENGTH };
  const whole = renderValueParts(summary, options);
  if (!summary.includes('`') || whole.cut) return whole.text;
  // Each piece between backticks escaped as inside the whole value: between two letters, so a space
  // at its edge stays a space (renderValue shows a value's own leading or trailing space escaped).
  const inside = { maxGraphemes: MAX_GRANT_TEXT_LENGTH + 2 };
  const body = summary
    .split('`')
    .map((piece) => (piece === '' ? '' : renderValueParts(`x${piece}x`, inside).body.slice(1, -1)))
    .join('`');
  const longest = Math.max(...(summary.match(/`+/g) ?? ['']).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  // What renderValue puts after the code span (not cut: only its warnings).
  const suffix = whole.text.slice(whole.body.length + 2);
  return `${fence} ${body} ${fence}${suffix}`;
}

/** JSON text in ASCII: every character above U+007E as a `\uXXXX` escape (valid JSON, parsing to the same value). */
export function asciiJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Opens this command's own audit trail under the servers' `--audit` prefix, with their key file. */
async function openTrail(audit: { prefix: string; keyFile: string }, store: ConfirmStore): Promise<AuditLog> {
  const ring = (await readKeyFile(audit.keyFile))!;
  const { openAuditTrail } = await import('./auditCli.js');
  return openAuditTrail(audit.prefix, ring, err, store as Ledger);
}

/**
 * Runs `grants list` or `grants revoke`.
 *
 * `grants revoke` with `--audit PATH --key-file PATH` (the servers' own) opens a trail of this
 * process under that prefix (as a server does: its own file, opening and closing lines, its head
 * recorded in the shared store), before revoking, and writes `grant-revoked` there after the
 * revocation (`grant`, the grant's `tool` and `principal` tag, `outcome` `command-line`, `approver`
 * `null`).
 *
 * @returns the exit code: 0 listed (also none) or revoked (and its line written); 1 no live grant
 *   with that id, the store cannot be opened or read (a missing SQLite file, which is never created
 *   here; a Redis that is unreachable or refuses the connection), or the grant was revoked but its
 *   audit line could not be written (it stays revoked); 2 a `--ledger` Redis URL that does not
 *   parse (and, thrown as a `UsageError`, a key file or trail file that cannot be read or created,
 *   with nothing revoked). Messages show a Redis URL without its password.
 */
export async function runGrants(command: GrantsCommand): Promise<number> {
  const shown = shownLedger(command.ledger);
  const verb = command.kind === 'grants-list' ? 'list' : 'revoke';
  if (command.ledger.startsWith('sqlite:')) {
    // Listing or revoking must not create a ledger file where there was none.
    if (!existsSync(command.ledger.slice('sqlite:'.length))) {
      err(`--ledger ${shown}: no such SQLite file (the store the servers share; it is not created here)`);
      return 1;
    }
  } else {
    try {
      if (isPostgresSpec(command.ledger)) postgresSpec(command.ledger);
      else redisUrl(command.ledger);
    } catch (e) {
      if (!(e instanceof UsageError)) throw e;
      err(e.message);
      return EXIT_USAGE;
    }
  }
  let store: ConfirmStore;
  try {
    // The audience namespaces a Redis ledger; a SQLite ledger holds every audience's grants.
    store = await openLedger(command.ledger, command.audience ?? DEFAULT_AUDIENCE);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    err(`cannot ${verb} grants: ${e.message}`);
    return 1;
  }
  const query = command.audience === undefined ? {} : { audience: command.audience };
  const ofAudience = command.audience === undefined ? '' : ` of audience ${renderValue(command.audience)}`;
  try {
    const nowMs = Date.now();
    if (command.kind === 'grants-list') {
      const grants = await store.findGrants(query, nowMs);
      if (command.json) process.stdout.write(`${asciiJson(grants)}\n`);
      else for (const grant of grants) process.stdout.write(`${grantLine(grant, nowMs)}\n`);
      if (grants.length === 0) err(`no live grants${ofAudience} in the ${store.kind} ledger at ${shown}`);
      return 0;
    }
    // With --audience, only a grant of that audience is revoked (in SQLite, which holds every audience's).
    // The grant as it is before the revocation: its tool and principal tag go on the audit line.
    const live = command.audience === undefined && !command.audit ? undefined : await store.findGrants(query, nowMs);
    const grant = live?.find((g) => g.id === command.id);
    const inAudience = command.audience === undefined || grant !== undefined;
    // The trail is opened before anything is revoked: one that cannot be created stops the command (exit 2).
    const trail = command.audit ? await openTrail(command.audit, store) : undefined;
    try {
      if (!inAudience || (await store.revokeGrant(command.id, nowMs)) === 'unknown') {
        err(
          `no live grant ${command.id}${ofAudience} (ended, revoked before, or never in this store${command.audience === undefined ? '' : ' under that audience'})`,
        );
        return 1;
      }
      err(`revoked grant ${command.id}`);
      if (!trail) return 0;
      // Written after the revocation, which it never undoes (as the approval page's Revoke).
      try {
        await trail.record({
          event: 'grant-revoked',
          tool: grant?.tool ?? null,
          principal: grant?.principal ?? null,
          jti: null,
          args: null,
          question: null,
          outcome: 'command-line',
          code: null,
          count: null,
          approver: null,
          grant: command.id,
        });
      } catch (e) {
        err(
          `the grant stays revoked, but its grant-revoked line could not be written to ${trail.path}: ${(e as Error).message}`,
        );
        return 1;
      }
      return 0;
    } finally {
      await trail?.close().catch(() => {});
    }
  } catch (e) {
    if (!(e instanceof ConfirmLedgerUnavailableError)) throw e;
    const cause = (e as { cause?: unknown }).cause;
    err(
      `cannot ${verb} grants: the ${store.kind} ledger at ${shown} is unavailable${cause instanceof Error ? ` (${cause.message})` : ''}`,
    );
    return 1;
  } finally {
    await store.close?.().catch(() => {});
  }
}
