/**
 * Notification channels from their specs: {@link parseNotifySpec} reads `KIND:URL`
 * (`standard`, `slack`, `ntfy`), the URL given inline or as `$NAME` from the environment, and for
 * `standard` the Standard Webhooks secret from a file; {@link NotifyChannel} is the result.
 *
 * A channel's URL is a secret (a Slack incoming-webhook URL and an ntfy topic URL are bearer
 * credentials): a channel shows itself (`label`, `String(channel)`, `JSON.stringify`,
 * `util.inspect`) by its kind and origin only, and no refusal here names more of a URL than
 * its origin, nor the secret.
 *
 * Spec syntax:
 * - `standard:URL`, `slack:URL`, `ntfy:URL`, where URL is `https://…` (or `http://…` to a loopback
 *   host: `localhost`, `127.0.0.1`, `[::1]`) or `$NAME` (the URL read from the environment
 *   variable NAME, so it stays off the command line);
 * - `standard;secret-file=PATH:URL`: a `standard` channel with its own secret file; a plain
 *   `standard:URL` uses the default secret file (the command line's `--notify-secret-file`).
 *   The URL starts at the first `:http://`, `:https://` or `:$` after `secret-file=`, so PATH
 *   must not hold one of those.
 *
 * A secret file holds one Standard Webhooks secret, `whsec_` then the key in base64 (at least
 * 16 bytes decoded), surrounding white space ignored.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { inspect } from 'node:util';
import { ConfigError } from '../errors.js';

/** The channel kinds: a signed Standard Webhooks event, a Slack incoming-webhook message, an ntfy publish. */
export type NotifyKind = 'standard' | 'slack' | 'ntfy';

/** Every {@link NotifyKind}, in the order messages and counters list them. */
export const NOTIFY_KINDS: readonly NotifyKind[] = ['standard', 'slack', 'ntfy'];

/** The fewest bytes a Standard Webhooks key may have, decoded from its `whsec_` secret: 16. */
export const MIN_SECRET_BYTES = 16;

/** The prefix of a Standard Webhooks secret. */
const SECRET_PREFIX = 'whsec_';

/** The words every refusal of {@link parseNotifySpec} begins with (a command line names its flag instead). */
const SUBJECT = 'notify';

/** The host names plain `http` may go to (as the JWK set's URL): this host only. */
const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'];

/**
 * One notification channel: its kind, where it goes, and (for `standard`) its signing key. Made by
 * {@link parseNotifySpec}.
 *
 * Shown by kind and origin only: `label` (`slack https://hooks.slack.com`) is what `toString`,
 * `toJSON` and `util.inspect` give; the URL and the key are readable only through their
 * accessors.
 */
export class NotifyChannel {
  /** The channel's kind. */
  readonly kind: NotifyKind;
  /** The URL's origin (`https://hooks.slack.com`): all of it a message may show. */
  readonly origin: string;
  /** `KIND ORIGIN`, e.g. `ntfy https://ntfy.sh`: how logs and messages name the channel. */
  readonly label: string;
  readonly #url: URL;
  readonly #key: Uint8Array | undefined;

  /**
   * @param kind - the channel's kind.
   * @param url - where to send (a secret); checked by {@link parseNotifySpec}, not here.
   * @param key - the Standard Webhooks key (decoded bytes), for `standard` only.
   */
  constructor(kind: NotifyKind, url: URL, key?: Uint8Array) {
    this.kind = kind;
    this.#url = new URL(url.href);
    this.#key = key === undefined ? undefined : Uint8Array.from(key);
    this.origin = this.#url.origin;
    this.label = `${kind} ${this.origin}`;
  }

  /** The full URL requests go to (a secret: never log it). A copy. */
  get url(): URL {
    return new URL(this.#url.href);
  }

  /** The Standard Webhooks signing key (a secret), `undefined` for `slack` and `ntfy`. A copy. */
  get key(): Uint8Array | undefined {
    return this.#key === undefined ? undefined : Uint8Array.from(this.#key);
  }

  toString(): string {
    return this.label;
  }

  toJSON(): { kind: NotifyKind; origin: string } {
    return { kind: this.kind, origin: this.origin };
  }

  [inspect.custom](): string {
    return `NotifyChannel(${this.label})`;
  }
}

/** Options of {@link parseNotifySpec}. */
export interface NotifySpecOptions {
  /** Where `$NAME` URLs are read from. Defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Reads a secret file as text. Defaults to `readFileSync(path, 'utf8')`. */
  readSecretFile?: (path: string) => string;
  /** The secret file of a `standard:URL` spec without `secret-file=` (the command line's `--notify-secret-file`). */
  defaultSecretFile?: string;
}

function refused(shown: string, problem: string, cause?: unknown): ConfigError {
  return new ConfigError('ERR_CONFIG_NOTIFY', `${SUBJECT} ${shown}: ${problem}`, {
    subject: SUBJECT,
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * Reads one notification channel's spec (syntax in the module documentation).
 *
 * @param spec - e.g. `slack:$SLACK_WEBHOOK_URL`, `ntfy:https://ntfy.sh/TOPIC`,
 *   `standard;secret-file=/etc/mcp-confirm/hook.secret:https://hooks.example.com/mcp`.
 * @returns the channel (its URL parsed and checked; for `standard`, its key read and decoded).
 * @throws {ConfigError} `ERR_CONFIG_NOTIFY` (`subject`: `notify`) for an unknown or missing kind,
 *   an unknown option, a `$NAME` that is unset or not a variable name, a URL that does not parse,
 *   is not `http(s)`, is plain `http` to a host other than a loopback one, or carries a user name
 *   or password, a `standard` channel without a secret file, and a secret file that cannot be
 *   read or holds no usable `whsec_` secret. The message names the channel by kind and origin
 *   (or `$NAME`) only: never a URL's path or query, never the secret.
 */
export function parseNotifySpec(spec: string, options: NotifySpecOptions = {}): NotifyChannel {
  if (typeof spec !== 'string') throw new TypeError('a notify spec must be a string');
  const head = /^([A-Za-z][A-Za-z0-9+.-]{0,31})(?=[:;])/.exec(spec);
  if (head === null) throw refused('channel', 'must be KIND:URL, with KIND standard, slack or ntfy');
  const word = head[1]!;
  const kind = word.toLowerCase();
  if (kind === 'http' || kind === 'https')
    throw refused('channel', 'needs its kind before the URL: standard:URL, slack:URL or ntfy:URL');
  if (kind !== 'standard' && kind !== 'slack' && kind !== 'ntfy')
    throw refused(`channel ${word}`, 'unknown kind (standard, slack or ntfy)');

  let rest = spec.slice(word.length);
  let secretFile: string | undefined;
  if (rest.startsWith(';')) {
    const option = /^;secret-file=/.exec(rest);
    if (option === null || kind !== 'standard')
      throw refused(kind, 'the only option is secret-file=PATH, of a standard channel (standard;secret-file=PATH:URL)');
    const after = rest.slice(option[0].length);
    const at = after.search(/:(?:https?:\/\/|\$)/i);
    if (at <= 0) throw refused(kind, 'must be standard;secret-file=PATH:URL, with URL https://… or $NAME');
    secretFile = after.slice(0, at);
    rest = after.slice(at);
  }
  const target = rest.slice(1);

  let text = target;
  let shown = kind;
  if (target.startsWith('$')) {
    const name = target.slice(1);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw refused(kind, 'a URL from the environment is $NAME, with NAME letters, digits and _');
    shown = `${kind}:$${name}`;
    const value = (options.env ?? process.env)[name];
    if (value === undefined || value === '') throw refused(shown, `the environment variable ${name} is not set`);
    text = value.trim();
  }

  let url: URL;
  try {
    url = new URL(text);
  } catch {
    // The text is not shown: it may be a secret URL with a typo.
    throw refused(shown, 'the URL is not a valid http(s) URL (not shown: a channel URL is a secret)');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw refused(shown, 'the URL must be https (plain http only to a loopback host)');
  shown = shown === kind ? `${kind}:${url.origin}` : `${shown} (${url.origin})`;
  if (url.protocol !== 'https:' && !LOOPBACK_HOSTS.includes(url.hostname))
    throw refused(shown, 'the URL must be https (plain http only to a loopback host)');
  if (url.username !== '' || url.password !== '')
    throw refused(shown, 'the URL must not carry a user name or password (an ntfy token goes in the URL as ?auth=…)');

  if (kind !== 'standard') return new NotifyChannel(kind, url);
  const path = secretFile ?? options.defaultSecretFile;
  if (path === undefined || path === '')
    throw refused(
      shown,
      'a standard channel needs a Standard Webhooks secret file (standard;secret-file=PATH:URL, or a default)',
    );
  return new NotifyChannel(kind, url, readSecret(shown, path, options.readSecretFile));
}

/** The key of a Standard Webhooks secret file: the base64 after `whsec_`, decoded. */
function readSecret(shown: string, path: string, read?: (path: string) => string): Uint8Array {
  let text: string;
  try {
    text = read === undefined ? readFileSync(path, 'utf8') : read(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException | undefined)?.code;
    throw refused(shown, `cannot read the secret file ${JSON.stringify(path)}${code ? ` (${code})` : ''}`);
  }
  const secret = String(text).trim();
  const base64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : undefined;
  if (base64 === undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(base64) || base64.length % 4 !== 0)
    throw refused(
      shown,
      `the secret file ${JSON.stringify(path)} does not hold a Standard Webhooks secret (whsec_ then base64)`,
    );
  const key = Buffer.from(base64, 'base64');
  if (key.length < MIN_SECRET_BYTES)
    throw refused(shown, `the secret in ${JSON.stringify(path)} is shorter than ${MIN_SECRET_BYTES} bytes`);
  return new Uint8Array(key);
}
