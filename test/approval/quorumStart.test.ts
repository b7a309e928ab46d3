/**
 * The start-up check of a quorum (issue 19 part 3): `checkApproversRequired` and
 * `PasskeyApproval.start({ approversRequired })` refuse a quorum the approvers cannot meet; the
 * page end to end is in test/e2e/passkeyQuorum.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { checkApproversRequired, type ApproversFile } from '../../src/approval/approvers.js';
import { PasskeyApproval } from '../../src/approval/passkey.js';
import { ConfigError } from '../../src/errors.js';
import { jwtPrincipalFor } from '../../src/principals.js';
import { MemoryLedger } from '../../src/store/memory.js';

function file(...principals: string[][]): ApproversFile {
  return {
    version: 1,
    rpId: 'localhost',
    approvers: principals.map((p, i) => ({
      name: `a${i}`,
      credentialId: `c${i}`,
      publicKey: 'pk',
      counter: 0,
      transports: [],
      principals: p,
      enrolledAt: '2026-12-01T00:00:00.000Z',
    })),
  };
}

function refusal(run: () => unknown): ConfigError {
  try {
    run();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error('accepted');
}

describe('checkApproversRequired', () => {
  it('refuses a quorum above the approvers of any principal the file names, naming it; control: enough for each passes, and 1 always does', () => {
    const alice = jwtPrincipalFor('https://auth.example.com', 'alice');
    const f = file(['local'], ['local', alice], [alice], ['local'], [alice]);
    expect(() => checkApproversRequired(f, 3)).not.toThrow();
    const e = refusal(() => checkApproversRequired(f, 4));
    expect(e.code).toBe('ERR_CONFIG_APPROVERS_REQUIRED');
    expect(e.message).toBe(
      '4 distinct approvers must approve each call, but the principal local has 3 enrolled approvers; enrol more, or require fewer',
    );
    const g = file(['local'], ['local'], [alice]);
    const byAlice = refusal(() => checkApproversRequired(g, 2));
    expect(byAlice.message).toContain('the principal alice (issuer https://auth.example.com) has 1 enrolled approver;');
    expect(() => checkApproversRequired(file(['local']), 1)).not.toThrow();
    expect(() => checkApproversRequired(f, 0)).toThrow(RangeError);
    expect(() => checkApproversRequired(f, 17)).toThrow(RangeError);
  });

  it('PasskeyApproval.start refuses approversRequired above the approvers; control: as many as there are starts', async () => {
    const store = new MemoryLedger();
    const two = file(['local'], ['local']);
    await expect(PasskeyApproval.start({ store, approvers: two, approversRequired: 3 })).rejects.toMatchObject({
      code: 'ERR_CONFIG_APPROVERS_REQUIRED',
    });
    const approval = await PasskeyApproval.start({ store, approvers: two, approversRequired: 2 });
    try {
      const opened = await approval.open(
        {
          jti: 'j1',
          principal: 'local',
          view: { audience: 'a', principal: 'local', tool: 'delete_file', question: 'q', values: [] },
          expiresAtMs: Date.now() + 60_000,
        },
        Date.now(),
      );
      expect((await store.approvalById(opened.id, Date.now()))?.approvalsRequired).toBe(2);
    } finally {
      await approval.close();
    }
  });

  it("a per-tool quorum opens each approval with its tool's number (1: none stored, as without a quorum)", async () => {
    const store = new MemoryLedger();
    const approval = await PasskeyApproval.start({
      store,
      approvers: file(['local'], ['local']),
      approversRequired: (tool) => (tool.startsWith('delete_') ? 2 : 1),
    });
    try {
      const open = (jti: string, tool: string) =>
        approval.open(
          {
            jti,
            principal: 'local',
            view: { audience: 'a', principal: 'local', tool, question: 'q', values: [] },
            expiresAtMs: Date.now() + 60_000,
          },
          Date.now(),
        );
      const del = await open('j-del', 'delete_file');
      const read = await open('j-read', 'read_file');
      expect((await store.approvalById(del.id, Date.now()))?.approvalsRequired).toBe(2);
      expect((await store.approvalById(read.id, Date.now()))?.approvalsRequired).toBeUndefined();
    } finally {
      await approval.close();
    }
  });
});
