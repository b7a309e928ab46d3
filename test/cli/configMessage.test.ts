/**
 * The two error families (src/errors.ts) and the command line's wording of a ConfigError
 * (src/cli/common.ts `configMessage`): the library's sentence names no flag or command, the CLI's
 * is the one it printed before.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadApproversForServer } from '../../src/approval/approvers.js';
import { enrollApprover } from '../../src/approval/enroll.js';
import { PasskeyApproval } from '../../src/approval/passkey.js';
import { parsePublicUrl } from '../../src/approval/publicUrl.js';
import { configMessage } from '../../src/cli/common.js';
import { REDEEM_WITHIN_MS } from '../../src/defaults.js';
import {
  ConfigError,
  ConfirmApprovalExpiredError,
  ConfirmError,
  ConfirmOsError,
  type AnyConfirmError,
} from '../../src/errors.js';
import { parseAllowedHosts, parseBindAddress } from '../../src/http/bind.js';
import { createJwtVerifier } from '../../src/http/jwtAuth.js';
import { MemoryLedger } from '../../src/store/memory.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-config-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** What `run` threw, checked to be a ConfigError. */
async function refusal(run: () => unknown): Promise<ConfigError> {
  const error = await (async () => run())().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

const ANN = {
  name: 'ann',
  credentialId: 'AAAA',
  publicKey: 'BBBB',
  counter: 0,
  transports: [],
  principals: ['local'],
  enrolledAt: '2026-01-01T00:00:00.000Z',
};

/** An approvers file for `rpId` holding ann, mode 0600. */
function approversFile(rpId: string): string {
  const path = join(dir, `approvers-${rpId}.json`);
  writeFileSync(path, JSON.stringify({ version: 1, rpId, approvers: [ANN] }), { mode: 0o600 });
  return path;
}

describe('ConfirmError: one subclass per code, narrowed by a switch on the code', () => {
  it('a caught refusal narrows to its subclass by its code', () => {
    const caught: unknown = new ConfirmOsError('EPERM', 'delete the file');
    expect(caught).toBeInstanceOf(ConfirmError);
    const refusal = caught as AnyConfirmError;
    switch (refusal.code) {
      case 'ERR_CONFIRM_OS':
        expect(refusal.osCode).toBe('EPERM');
        break;
      default:
        throw new Error(`not narrowed: ${refusal.code}`);
    }
  });

  it('the approval-expired sentence states REDEEM_WITHIN_MS', () => {
    expect(REDEEM_WITHIN_MS).toBe(120_000);
    expect(new ConfirmApprovalExpiredError().message).toContain(
      `redeemed within ${REDEEM_WITHIN_MS / 1000} seconds of being given`,
    );
  });
});

describe('ConfigError: the library names no flag; the command line words it as before', () => {
  it('a setting a flag gives: the library begins with its subject, the CLI with the flag', async () => {
    const url = await refusal(() => parsePublicUrl('ftp://x'));
    expect(url).toMatchObject({
      code: 'ERR_CONFIG_PUBLIC_URL',
      subject: 'the public URL',
      message: 'the public URL must be an http(s) URL, got "ftp://x"',
    });
    expect(configMessage(url)).toBe('--public-url must be an http(s) URL, got "ftp://x"');
    const bind = await refusal(() => parseBindAddress('127.0.0.1:99999'));
    expect(bind).toMatchObject({
      code: 'ERR_CONFIG_BIND_ADDRESS',
      message: 'the bind address port must be 0 to 65535, got 99999',
    });
    expect(configMessage(bind)).toBe('--http port must be 0 to 65535, got 99999');
    const hosts = await refusal(() => parseAllowedHosts('http://x'));
    expect(hosts.code).toBe('ERR_CONFIG_ALLOWED_HOSTS');
    expect(configMessage(hosts)).toBe(
      '--allowed-hosts entries must be bare hostnames (no scheme, port or path), got "http://x"',
    );
    const jwks = await refusal(() =>
      createJwtVerifier({
        issuer: 'https://issuer.example',
        jwks: { keys: [{ kty: 'oct', k: 'AA' }] },
        resource: new URL('http://localhost/mcp'),
      }),
    );
    expect(jwks).toMatchObject({
      code: 'ERR_CONFIG_JWKS',
      message: 'jwks: keys[0] is a symmetric (oct) key; only public keys are accepted',
    });
    expect(configMessage(jwks)).toBe('--auth-jwks: keys[0] is a symmetric (oct) key; only public keys are accepted');
  });

  it('a missing approvers file: the CLI adds how to enrol one', async () => {
    const path = join(dir, 'none.json');
    const missing = await refusal(() => loadApproversForServer(path, []));
    expect(missing).toMatchObject({
      code: 'ERR_CONFIG_APPROVERS_MISSING',
      value: path,
      message: `approvers file ${path} does not exist`,
    });
    expect(configMessage(missing)).toBe(
      `approvers file ${path} does not exist (enrol one with: mcp-confirm approvers enroll --approvers ${path} --name NAME)`,
    );
  });

  it('enrolment: a name taken and a file of another RP ID', async () => {
    const local = approversFile('localhost');
    const taken = await refusal(() => enrollApprover({ approversPath: local, name: 'ann', onUrl: () => {} }));
    expect(taken).toMatchObject({
      code: 'ERR_CONFIG_APPROVER_EXISTS',
      message: `an approver named "ann" already exists in ${local}`,
    });
    expect(configMessage(taken)).toBe(
      `an approver named "ann" already exists in ${local}; use --replace to replace it`,
    );
    const publicUrl = new URL('https://approve.test');
    const other = await refusal(() =>
      enrollApprover({ approversPath: local, name: 'bob', publicUrl, onUrl: () => {} }),
    );
    expect(other.code).toBe('ERR_CONFIG_RP_ID');
    expect(other.message).toBe(
      `the approvers file ${local} was made for RP ID "localhost", not "approve.test" (from the public URL https://approve.test); use another file for this RP ID`,
    );
    expect(configMessage(other, publicUrl)).toBe(
      `the approvers file ${local} was made for RP ID "localhost", not "approve.test" (from --public-url https://approve.test); use another file for this RP ID`,
    );
  });

  it('the approval page: approvers of another RP ID; the CLI adds how to enrol them again', async () => {
    const store = new MemoryLedger();
    const remote = { version: 1 as const, rpId: 'approve.test', approvers: [ANN] };
    const overStdio = await refusal(() => PasskeyApproval.start({ store, approvers: remote, port: 0 }));
    expect(overStdio.message).toBe(
      'the approvers file\'s approvers ("ann") were enrolled for RP ID "approve.test", but this page\'s RP ID is "localhost" (over stdio)',
    );
    expect(configMessage(overStdio)).toBe(`${overStdio.message}; enrol them again without --public-url`);
    const publicUrl = new URL('https://other.test');
    const behindUrl = await refusal(() => PasskeyApproval.start({ store, approvers: remote, publicUrl }));
    expect(behindUrl.code).toBe('ERR_CONFIG_RP_ID');
    expect(configMessage(behindUrl, publicUrl)).toBe(
      'the approvers file\'s approvers ("ann") were enrolled for RP ID "approve.test", but this page\'s RP ID is "other.test" (from the public URL https://other.test); enrol them again with: mcp-confirm approvers enroll --public-url https://other.test …',
    );
    await store.close();
  });
});
