/**
 * Channel specs (src/notify/spec.ts): what parses, what is refused with ERR_CONFIG_NOTIFY, and that
 * a channel and every refusal show a URL by its origin only, never its path, query or a secret.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { NotifyChannel, parseNotifySpec, type NotifySpecOptions } from '../../src/notify/spec.js';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const OTHER_SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const files: Record<string, string> = { '/etc/hook.secret': SECRET, '/etc/other.secret': OTHER_SECRET };
const readSecretFile = (path: string): string => {
  const text = files[path];
  if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
  return text;
};

function refusal(spec: string, options: NotifySpecOptions = {}): ConfigError {
  try {
    parseNotifySpec(spec, { readSecretFile, ...options });
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    const error = e as ConfigError;
    expect(error.code).toBe('ERR_CONFIG_NOTIFY');
    expect(error.subject).toBe('notify');
    expect(error.message.startsWith('notify ')).toBe(true);
    return error;
  }
  throw new Error(`${spec} was accepted`);
}

/** Every part of a URL or secret that no message may show. */
const HIDDEN = ['SECRETPATH', 'SECRETQ', 'SECRETPW', SECRET.slice(6)];

function showsNothingHidden(text: string): void {
  for (const h of HIDDEN) expect(text).not.toContain(h);
}

describe('parseNotifySpec: channels that parse', () => {
  it('reads slack, ntfy and standard channels with https URLs', () => {
    const slack = parseNotifySpec('slack:https://hooks.slack.com/services/T/B/SECRETPATH');
    expect(slack.kind).toBe('slack');
    expect(slack.origin).toBe('https://hooks.slack.com');
    expect(slack.url.href).toBe('https://hooks.slack.com/services/T/B/SECRETPATH');
    expect(slack.key).toBeUndefined();
    const ntfy = parseNotifySpec('NTFY:https://ntfy.sh/SECRETPATH?auth=SECRETQ');
    expect(ntfy.kind).toBe('ntfy');
    expect(ntfy.url.search).toBe('?auth=SECRETQ');
    const standard = parseNotifySpec('standard:https://hooks.example.com/SECRETPATH', {
      readSecretFile,
      defaultSecretFile: '/etc/hook.secret',
    });
    expect(standard.kind).toBe('standard');
    expect(Buffer.from(standard.key!).toString('base64')).toBe(SECRET.slice(6));
  });

  it('shows a channel by kind and origin only (label, String, JSON, util.inspect)', () => {
    const channel = parseNotifySpec('slack:https://hooks.slack.com/services/T/B/SECRETPATH?x=SECRETQ');
    expect(channel.label).toBe('slack https://hooks.slack.com');
    for (const shown of [String(channel), JSON.stringify(channel), inspect(channel, { depth: 5, showHidden: true })]) {
      expect(shown).toContain('https://hooks.slack.com');
      showsNothingHidden(shown);
    }
    // control: the accessor does give the whole URL (what the notifier posts to)
    expect(channel.url.pathname).toContain('SECRETPATH');
  });

  it('gives a standard channel its own secret file with secret-file=, over the default (path may hold a colon)', () => {
    files['C:/keys/hook.secret'] = OTHER_SECRET;
    const own = parseNotifySpec('standard;secret-file=/etc/other.secret:https://hooks.example.com/a', {
      readSecretFile,
      defaultSecretFile: '/etc/hook.secret',
    });
    expect(Buffer.from(own.key!).toString('base64')).toBe(OTHER_SECRET.slice(6));
    const colon = parseNotifySpec('standard;secret-file=C:/keys/hook.secret:$HOOK', {
      readSecretFile,
      env: { HOOK: 'https://hooks.example.com/a' },
    });
    expect(Buffer.from(colon.key!).toString('base64')).toBe(OTHER_SECRET.slice(6));
    // control: without secret-file=, the default one
    const plain = parseNotifySpec('standard:https://hooks.example.com/a', {
      readSecretFile,
      defaultSecretFile: '/etc/hook.secret',
    });
    expect(Buffer.from(plain.key!).toString('base64')).toBe(SECRET.slice(6));
  });

  it('reads a real secret file from disk by default (white space around the secret ignored)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'notify-spec-'));
    const path = join(dir, 'hook.secret');
    writeFileSync(path, `  ${SECRET}\n`, { mode: 0o600 });
    const channel = parseNotifySpec(`standard;secret-file=${path}:https://hooks.example.com/a`);
    expect(Buffer.from(channel.key!).toString('base64')).toBe(SECRET.slice(6));
  });

  it('reads a $NAME URL from the environment (the URL stays off the command line)', () => {
    const channel = parseNotifySpec('ntfy:$NTFY_TOPIC_URL', {
      env: { NTFY_TOPIC_URL: ' https://ntfy.example.com/SECRETPATH\n' },
    });
    expect(channel.url.href).toBe('https://ntfy.example.com/SECRETPATH');
    expect(channel.label).toBe('ntfy https://ntfy.example.com');
  });

  it('allows plain http to a loopback host only (localhost, 127.0.0.1, [::1])', () => {
    for (const host of ['localhost:8080', '127.0.0.1:8080', '[::1]:8080'])
      expect(parseNotifySpec(`ntfy:http://${host}/topic`).origin).toBe(`http://${host}`);
    const error = refusal('ntfy:http://ntfy.example.com/SECRETPATH?auth=SECRETQ');
    expect(error.message).toBe(
      'notify ntfy:http://ntfy.example.com: the URL must be https (plain http only to a loopback host)',
    );
  });

  it('makes a NotifyChannel (the notifier takes only those)', () => {
    expect(parseNotifySpec('slack:https://hooks.slack.com/x')).toBeInstanceOf(NotifyChannel);
  });
});

describe('parseNotifySpec: refusals name the channel by kind and origin only', () => {
  it.each([
    ['no kind', 'hooks.slack.com/services/SECRETPATH', 'must be KIND:URL'],
    ['a URL without a kind', 'https://hooks.slack.com/services/SECRETPATH', 'needs its kind before the URL'],
    ['an unknown kind', 'teams:https://example.webhook.office.com/SECRETPATH', 'notify channel teams: unknown kind'],
    ['a URL that does not parse', 'slack:hooks slack SECRETPATH', 'notify slack: the URL is not a valid http(s) URL'],
    ['a URL that is not http(s)', 'ntfy:ftp://ntfy.example.com/SECRETPATH', 'notify ntfy: the URL must be https'],
    [
      'plain http to a remote host',
      'slack:http://hooks.slack.com/SECRETPATH?x=SECRETQ',
      'notify slack:http://hooks.slack.com: the URL must be https',
    ],
    [
      'a user and password in the URL',
      'ntfy:https://phil:SECRETPW@ntfy.example.com/SECRETPATH',
      'notify ntfy:https://ntfy.example.com: the URL must not carry a user name or password',
    ],
    [
      'an unset $NAME',
      'slack:$NO_SUCH_HOOK',
      'notify slack:$NO_SUCH_HOOK: the environment variable NO_SUCH_HOOK is not set',
    ],
    ['a $NAME that is no variable name', 'slack:$HOOK-URL', 'notify slack: a URL from the environment is $NAME'],
    [
      'an option of a channel other than standard',
      'slack;secret-file=/etc/hook.secret:https://hooks.slack.com/SECRETPATH',
      'the only option is secret-file=PATH',
    ],
    [
      'an unknown option',
      'standard;key=/etc/hook.secret:https://hooks.example.com/SECRETPATH',
      'the only option is secret-file=PATH',
    ],
    [
      'a secret-file= without a URL after it',
      'standard;secret-file=/etc/hook.secret',
      'must be standard;secret-file=PATH:URL',
    ],
    [
      'a standard channel without any secret file',
      'standard:https://hooks.example.com/SECRETPATH?SECRETQ',
      'notify standard:https://hooks.example.com: a standard channel needs a Standard Webhooks secret file',
    ],
    [
      'a secret file that cannot be read',
      'standard;secret-file=/no/such.secret:https://hooks.example.com/SECRETPATH',
      'cannot read the secret file "/no/such.secret" (ENOENT)',
    ],
  ])('refuses %s', (_what, spec, words) => {
    const error = refusal(spec);
    expect(error.message).toContain(words);
    showsNothingHidden(error.message);
  });

  it('refuses a $NAME whose value is not a valid or allowed URL without showing the value', () => {
    const bad = refusal('slack:$HOOK', { env: { HOOK: 'hooks.slack.com/services/SECRETPATH' } });
    expect(bad.message).toBe(
      'notify slack:$HOOK: the URL is not a valid http(s) URL (not shown: a channel URL is a secret)',
    );
    const plain = refusal('slack:$HOOK', { env: { HOOK: 'http://hooks.slack.com/services/SECRETPATH' } });
    expect(plain.message).toBe(
      'notify slack:$HOOK (http://hooks.slack.com): the URL must be https (plain http only to a loopback host)',
    );
    // control: the same variable holding an https URL parses
    expect(parseNotifySpec('slack:$HOOK', { env: { HOOK: 'https://hooks.slack.com/services/SECRETPATH' } }).kind).toBe(
      'slack',
    );
  });

  it.each([
    ['text that is no secret', 'SECRETPW-not-a-secret'],
    ['a secret without its whsec_ prefix', SECRET.slice(6)],
    ['a whsec_ secret that is not base64', 'whsec_SECRETPW!!'],
    ['a key shorter than 16 bytes', `whsec_${randomBytes(8).toString('base64')}`],
  ])('refuses a secret file holding %s, without showing it', (_what, content) => {
    files['/etc/bad.secret'] = content;
    const error = refusal('standard;secret-file=/etc/bad.secret:https://hooks.example.com/SECRETPATH');
    expect(error.message).toContain('"/etc/bad.secret"');
    expect(error.message).not.toContain(content);
    showsNothingHidden(error.message);
    // control: the same file with a good secret parses
    files['/etc/bad.secret'] = SECRET;
    expect(
      parseNotifySpec('standard;secret-file=/etc/bad.secret:https://hooks.example.com/a', { readSecretFile }).kind,
    ).toBe('standard');
  });
});
