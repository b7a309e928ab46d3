/**
 * The approval flags shared by `mcp-confirm` (serving `delete_file`) and `mcp-confirm proxy`:
 * `--approval form|passkey`, `--approvers`, `--approval-port`, `--approval-wait`, `--public-url` and
 * `--approvers-required`, and the notification flags of passkey approval (`--notify SPEC`, repeatable,
 * `--notify-secret-file PATH`, `--notify-include-question`; docs/notifications.md), one set of
 * rules and messages for both (docs/passkey.md). Free of the WebAuthn and HTTP server
 * modules, so parsing loads neither.
 *
 * @module
 */
import { allowedHostnames } from '../http/bind.js';
import { DEFAULT_APPROVAL_WAIT_SECONDS, MAX_APPROVALS_REQUIRED } from '../defaults.js';
import { parsePublicUrl } from '../approval/publicUrl.js';
import { parseNotifySpec, type NotifyChannel } from '../notify/spec.js';
import { asUsageError, UsageError, type FlagValues } from './common.js';
import type { HttpSpec } from './httpArgs.js';

/** The `parseArgs` option table of the approval flags (`--public-url` is also `approvers enroll`'s). */
export const APPROVAL_OPTIONS = {
  approval: { type: 'string' },
  approvers: { type: 'string' },
  'public-url': { type: 'string' },
  'approval-port': { type: 'string' },
  'approval-wait': { type: 'string' },
  notify: { type: 'string', multiple: true },
  'notify-secret-file': { type: 'string' },
  'notify-include-question': { type: 'boolean' },
  'approvers-required': { type: 'string' },
} as const;

type ApprovalValues = FlagValues<typeof APPROVAL_OPTIONS>;

/** How a human approves, as the flags ask. */
export interface ApprovalFlags {
  approval: 'form' | 'passkey';
  /** `--approvers PATH` (set exactly when `approval` is `passkey`). */
  approvers: string | undefined;
  /** Over stdio, the page's port on 127.0.0.1 and ::1 (0: a random free port). */
  approvalPort: number;
  /** How long a retry waits for the page's decision, in seconds (0 to 3600; default {@link DEFAULT_APPROVAL_WAIT_SECONDS}, 45). */
  approvalWaitSeconds: number;
  /** `--public-url` (with `--http` and passkey approval): the page's origin; its host name is the RP ID. */
  publicUrl: URL | undefined;
  /** `--notify SPEC` (repeatable, passkey approval only): the notification channels, read and checked (none when not given). */
  notify: NotifyChannel[];
  /** `--notify-include-question`: the notices carry the rendered question. */
  notifyIncludeQuestion: boolean;
  /**
   * `--approvers-required N`: how many distinct approvers must approve each call on the page
   * (1 to 16; default 1). The proxy's policy may ask more per tool (`quorum`), never fewer.
   */
  approversRequired: number;
}

/**
 * A whole number from `min` to `max`.
 *
 * @throws {UsageError} naming `flag` and the text given.
 */
export function wholeNumber(flag: string, text: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(text)) throw new UsageError(`${flag} must be a whole number, got ${JSON.stringify(text)}`);
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max}, got ${text}`);
  return n;
}

/**
 * `--public-url URL` checked with {@link parsePublicUrl}.
 *
 * @throws {UsageError} naming the flag and what is wrong.
 */
export function checkedPublicUrl(text: string): URL {
  try {
    return parsePublicUrl(text);
  } catch (e) {
    throw asUsageError(e);
  }
}

/**
 * Validates the approval flags against how the server is served (`http`: the `--http` settings,
 * undefined over stdio). Over stdio the page listens on localhost (`--approval-port`); over
 * `--http` it is served on the same listener at `--public-url`, whose host must be an allowed host
 * (the DNS-rebinding check every request passes).
 *
 * @throws {UsageError} for a mode other than form or passkey; passkey without `--approvers`;
 *   `--approvers`, `--approval-port`, `--approval-wait` or `--public-url` without passkey;
 *   `--public-url` over stdio; `--approval-port` with `--http`; `--http` passkey without
 *   `--public-url`; a public URL that is not an http(s) origin with a DNS host name, or whose
 *   host is not an allowed host; a port or wait out of range; the notification flags as
 *   {@link parseNotifyFlags} refuses them.
 * @param env - where `--notify KIND:$NAME` URLs are read. Defaults to the process environment.
 */
export function parseApprovalFlags(
  values: ApprovalValues,
  http: HttpSpec | undefined,
  env: NodeJS.ProcessEnv = process.env,
): ApprovalFlags {
  const approval = values.approval ?? 'form';
  if (approval !== 'form' && approval !== 'passkey')
    throw new UsageError(`--approval must be form or passkey, got ${JSON.stringify(approval)}`);
  if (approval === 'passkey' && (values.approvers === undefined || values.approvers === '')) {
    throw new UsageError(
      '--approval passkey needs --approvers PATH (enrol one with: mcp-confirm approvers enroll --approvers PATH --name NAME)',
    );
  }
  if (
    approval === 'form' &&
    (values.approvers !== undefined ||
      values['approval-port'] !== undefined ||
      values['approval-wait'] !== undefined ||
      values['public-url'] !== undefined)
  ) {
    throw new UsageError('--approvers, --approval-port, --approval-wait and --public-url need --approval passkey');
  }
  if (approval === 'form' && values['approvers-required'] !== undefined)
    throw new UsageError('--approvers-required needs --approval passkey (a quorum of enrolled approvers on the page)');
  let publicUrl: URL | undefined;
  if (approval === 'passkey' && http === undefined && values['public-url'] !== undefined) {
    throw new UsageError(
      '--public-url is for --http; over stdio the approval page is http://localhost:PORT (--approval-port)',
    );
  }
  if (approval === 'passkey' && http !== undefined) {
    // Over HTTP the page lives on the --http listener, at the origin browsers use.
    if (values['approval-port'] !== undefined)
      throw new UsageError(
        '--approval-port is for stdio; with --http the approval page is served on the --http listener',
      );
    if (values['public-url'] === undefined) {
      throw new UsageError(
        '--approval passkey with --http needs --public-url URL: the origin browsers use for the approval page (e.g. https://mcp.example.com); its host name is the WebAuthn RP ID',
      );
    }
    publicUrl = checkedPublicUrl(values['public-url']);
    // Requests for the page name the public URL's host: it must pass the DNS-rebinding check like any other.
    const allowed = allowedHostnames(http.bind, http.resource, http.allowedHosts);
    if (!allowed.includes(publicUrl.hostname)) {
      throw new UsageError(
        `--public-url host ${publicUrl.hostname} is not an allowed host (allowed: ${allowed.join(', ')}); add it with --allowed-hosts ${publicUrl.hostname}, or use the --resource URL's host`,
      );
    }
  }
  return {
    approval,
    approvers: values.approvers,
    approvalPort:
      values['approval-port'] === undefined ? 0 : wholeNumber('--approval-port', values['approval-port'], 1, 65_535),
    approvalWaitSeconds:
      values['approval-wait'] === undefined
        ? DEFAULT_APPROVAL_WAIT_SECONDS
        : wholeNumber('--approval-wait', values['approval-wait'], 0, 3_600),
    publicUrl,
    ...parseNotifyFlags(values, approval, env),
    approversRequired:
      values['approvers-required'] === undefined
        ? 1
        : wholeNumber('--approvers-required', values['approvers-required'], 1, MAX_APPROVALS_REQUIRED),
  };
}

/**
 * `--notify SPEC` (repeatable), `--notify-secret-file PATH` (the secret of every `standard:` channel
 * without its own) and `--notify-include-question`, each channel read with `parseNotifySpec` (its
 * `$NAME` URL from `env`, its secret file read now). A refusal names the flag and the channel by
 * kind and origin (or `$NAME`), never a URL's path or query, nor a secret.
 *
 * @throws {UsageError} for any of them without `--approval passkey` (`--notify needs --approval
 *   passkey`), `--notify-secret-file` or `--notify-include-question` without `--notify`, and a
 *   channel `parseNotifySpec` refuses (`ERR_CONFIG_NOTIFY`, as `--notify …`).
 */
export function parseNotifyFlags(
  values: Pick<ApprovalValues, 'notify' | 'notify-secret-file' | 'notify-include-question'>,
  approval: 'form' | 'passkey',
  env: NodeJS.ProcessEnv = process.env,
): Pick<ApprovalFlags, 'notify' | 'notifyIncludeQuestion'> {
  const specs = values.notify ?? [];
  const secretFile = values['notify-secret-file'];
  const includeQuestion = values['notify-include-question'] === true;
  if (approval !== 'passkey') {
    const given = [
      specs.length > 0 ? '--notify' : undefined,
      secretFile !== undefined ? '--notify-secret-file' : undefined,
      values['notify-include-question'] !== undefined ? '--notify-include-question' : undefined,
    ].filter((f) => f !== undefined);
    if (given.length > 0)
      throw new UsageError(
        `${given.join(', ')} need${given.length === 1 ? 's' : ''} --approval passkey (a notification carries the approval page's link; only the passkey on the page approves)`,
      );
  }
  if (specs.length === 0 && (secretFile !== undefined || values['notify-include-question'] !== undefined))
    throw new UsageError('--notify-secret-file and --notify-include-question need --notify SPEC');
  const notify: NotifyChannel[] = [];
  for (const spec of specs) {
    try {
      notify.push(
        parseNotifySpec(spec, { env, ...(secretFile !== undefined ? { defaultSecretFile: secretFile } : {}) }),
      );
    } catch (e) {
      throw asUsageError(e);
    }
  }
  return { notify, notifyIncludeQuestion: includeQuestion };
}
