/**
 * The command lines of `mcp-confirm approvers enroll|list|remove`: one option table per command,
 * the message for a flag of another command, and the parsers (run by `approvers.ts`).
 *
 * @module
 */
import { DEFAULT_ENROLL_TIMEOUT_SECONDS, MAX_APPROVALS_REQUIRED } from '../defaults.js';
import { jwtPrincipalFor } from '../principals.js';
import { APPROVAL_OPTIONS, checkedPublicUrl, wholeNumber } from './approvalArgs.js';
import { UsageError, type FlagValues } from './common.js';

/** `mcp-confirm approvers enroll`: enrol a passkey into the approvers file. */
export interface ApproversEnrollCommand {
  kind: 'approvers-enroll';
  approvers: string;
  name: string;
  /** 0: a random free port (stdio), or the public URL's port. */
  port: number | undefined;
  timeoutSeconds: number;
  replace: boolean;
  /** `--public-url`: the origin and RP ID of the server the approver is for (undefined: localhost). */
  publicUrl: URL | undefined;
  /** The principal strings the approver may approve for (`local` without `--principal`). */
  principals: string[];
  /** `--approvers-required N`: how many existing approvers must confirm (1 when not given; the file's recorded N applies too). */
  approversRequired: number;
}

/** `mcp-confirm approvers list|remove`. */
export type ApproversCommand =
  | ApproversEnrollCommand
  | { kind: 'approvers-list'; approvers: string }
  | { kind: 'approvers-remove'; approvers: string; name: string };

/** The option table of `approvers enroll`. `--principal ISS SUB` takes two words: the dispatcher pairs them. */
export const APPROVERS_ENROLL_OPTIONS = {
  approvers: APPROVAL_OPTIONS.approvers,
  name: { type: 'string' },
  port: { type: 'string' },
  timeout: { type: 'string' },
  replace: { type: 'boolean' },
  'public-url': APPROVAL_OPTIONS['public-url'],
  principal: { type: 'string', multiple: true },
  'approvers-required': APPROVAL_OPTIONS['approvers-required'],
} as const;

/** The option table of `approvers list`. */
export const APPROVERS_LIST_OPTIONS = { approvers: APPROVAL_OPTIONS.approvers } as const;

/** The option table of `approvers remove`. */
export const APPROVERS_REMOVE_OPTIONS = { approvers: APPROVAL_OPTIONS.approvers, name: { type: 'string' } } as const;

/** The flags only `approvers enroll` takes besides `--name`: named by the other commands' refusals. */
const ENROLL_ONLY = new Set(['port', 'timeout', 'replace', 'public-url', 'principal']);

/**
 * The message for a flag `approvers ACTION` does not take: for `list` and `remove`, the flags of
 * `enroll` are named together as belonging to it.
 */
export function approversForeign(action: 'enroll' | 'list' | 'remove'): (flag: string) => string {
  return (flag) =>
    action !== 'enroll' && ENROLL_ONLY.has(flag)
      ? '--port, --timeout, --replace, --public-url and --principal belong to approvers enroll'
      : `approvers ${action} does not take --${flag}`;
}

/** @throws {UsageError} without `--approvers PATH`. */
function approversPath(values: { approvers?: string }): string {
  if (values.approvers === undefined || values.approvers === '')
    throw new UsageError('approvers needs --approvers PATH');
  return values.approvers;
}

/**
 * Builds `approvers enroll`.
 *
 * @param principals - the `--principal ISS SUB` pairs, in the order given.
 * @throws {UsageError} without `--approvers` or `--name`; for an ISS that is not an http(s) URL, an
 *   empty or ill-formed SUB, a bad `--port`, `--timeout`, `--public-url` or `--approvers-required`.
 */
export function parseApproversEnroll(
  values: FlagValues<typeof APPROVERS_ENROLL_OPTIONS>,
  principals: ReadonlyArray<readonly [iss: string, sub: string]>,
): ApproversEnrollCommand {
  const approvers = approversPath(values);
  if (values.name === undefined) throw new UsageError('approvers enroll needs --name NAME');
  const tags = principals.map(([iss, sub]) => {
    let url: URL | undefined;
    try {
      url = new URL(iss);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
      throw new UsageError(
        `--principal ISS SUB: ISS is the token issuer, an http(s) URL equal to the server's --auth-issuer, got ${JSON.stringify(iss)}`,
      );
    }
    if (sub === '' || !sub.isWellFormed())
      throw new UsageError('--principal ISS SUB: SUB is the token subject, a non-empty string');
    return jwtPrincipalFor(iss, sub);
  });
  return {
    kind: 'approvers-enroll',
    approvers,
    name: values.name,
    port: values.port === undefined ? undefined : wholeNumber('--port', values.port, 1, 65_535),
    timeoutSeconds:
      values.timeout === undefined
        ? DEFAULT_ENROLL_TIMEOUT_SECONDS
        : wholeNumber('--timeout', values.timeout, 1, 86_400),
    replace: values.replace ?? false,
    publicUrl: values['public-url'] === undefined ? undefined : checkedPublicUrl(values['public-url']),
    principals: tags.length > 0 ? [...new Set(tags)] : ['local'],
    approversRequired:
      values['approvers-required'] === undefined
        ? 1
        : wholeNumber('--approvers-required', values['approvers-required'], 1, MAX_APPROVALS_REQUIRED),
  };
}

/** Builds `approvers list`. @throws {UsageError} without `--approvers`. */
export function parseApproversList(values: FlagValues<typeof APPROVERS_LIST_OPTIONS>): ApproversCommand {
  return { kind: 'approvers-list', approvers: approversPath(values) };
}

/** Builds `approvers remove`. @throws {UsageError} without `--approvers` or `--name`. */
export function parseApproversRemove(values: FlagValues<typeof APPROVERS_REMOVE_OPTIONS>): ApproversCommand {
  const approvers = approversPath(values);
  if (values.name === undefined) throw new UsageError('approvers remove needs --name NAME');
  return { kind: 'approvers-remove', approvers, name: values.name };
}
