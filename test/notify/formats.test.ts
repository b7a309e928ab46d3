/**
 * What each channel kind sends, as a local receiver gets it: the `standard` event verified with the
 * `standardwebhooks` package as the oracle (a tampered body, a wrong secret refused by it), the
 * Slack incoming-webhook message and the ntfy publish, untrusted names rendered, the question only
 * when included.
 */
import { randomBytes } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { standardSignature } from '../../src/notify/formats.js';
import { Notifier } from '../../src/notify/notifier.js';
import { parseNotifySpec } from '../../src/notify/spec.js';
import { renderValue } from '../../src/prompt/render.js';
import { SECRET_PATH, requested, startReceiver, type Received, type Receiver } from './receiver.js';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const readSecretFile = (): string => SECRET;

const receivers: Receiver[] = [];
afterEach(async () => {
  for (const rx of receivers.splice(0)) await rx.close();
});

/** Sends `notices` to one channel of `kind` at a fresh receiver; resolves with what it received. */
async function deliver(
  kind: 'standard' | 'slack' | 'ntfy',
  ...notices: Parameters<Notifier['notify']>[0][]
): Promise<Received[]> {
  const rx = await startReceiver();
  receivers.push(rx);
  const channel = parseNotifySpec(`${kind}:$HOOK`, {
    env: { HOOK: rx.url },
    readSecretFile,
    defaultSecretFile: 'hook.secret',
  });
  const lines: string[] = [];
  // a long attempt deadline: it only guards against a hang (a slow answer is never taken for a timeout)
  const notifier = new Notifier({ channels: [channel], log: (l) => lines.push(l), attemptTimeoutMs: 60_000 });
  for (const n of notices) notifier.notify(n);
  await notifier.idle();
  await notifier.close();
  expect(lines).toEqual([]);
  expect(notifier.counters()[kind]).toEqual({ sent: notices.length, failed: 0, dropped: 0, retried: 0 });
  for (const r of rx.received) {
    expect(r.method).toBe('POST');
    expect(r.path.startsWith(SECRET_PATH)).toBe(true);
  }
  return rx.received;
}

describe('standard: a Standard Webhooks event', () => {
  it('is signed so that the standardwebhooks package verifies it, and refuses it tampered or under another secret (control)', async () => {
    const [r] = await deliver('standard', requested());
    const oracle = new Webhook(SECRET);
    const event = oracle.verify(r!.body, r!.headers) as Record<string, unknown>;
    expect(event).toEqual(JSON.parse(r!.body));
    // attacks: a tampered body, another secret, another id: each refused by the oracle
    expect(() => oracle.verify(r!.body.replace('delete_file', 'delete_fila'), r!.headers)).toThrow(
      WebhookVerificationError,
    );
    expect(() => new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(r!.body, r!.headers)).toThrow(
      WebhookVerificationError,
    );
    expect(() => oracle.verify(r!.body, { ...r!.headers, 'webhook-id': 'msg_other' })).toThrow(
      WebhookVerificationError,
    );
  });

  it('carries the headers and body of the specification, and the notice fields only', async () => {
    const [r] = await deliver('standard', requested());
    expect(r!.headers['content-type']).toBe('application/json');
    expect(r!.headers['webhook-id']).toMatch(/^msg_[A-Za-z0-9_-]{22}$/);
    expect(r!.headers['webhook-timestamp']).toMatch(/^\d{10}$/);
    expect(r!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);
    const body = JSON.parse(r!.body);
    expect(Object.keys(body)).toEqual(['type', 'timestamp', 'data']);
    expect(body.type).toBe('approval.requested');
    expect(new Date(body.timestamp).toISOString()).toBe(body.timestamp);
    expect(body.data).toEqual({
      approvalId: 'apr_1',
      url: 'https://mcp.example.com/approve/apr_1',
      tool: 'delete_file',
      audience: 'mcp-confirm',
      expiresAt: '2026-12-03T23:00:00.000Z',
      principalTag: 'tag_0123456789abcdef',
    });
  });

  it('carries the question, the decision and the approvers only when the notice has them', async () => {
    const [asked, decided] = await deliver(
      'standard',
      requested({ question: 'Permanently delete `cache.txt`?' }),
      requested({ type: 'approval.decided', decision: 'approved', approvers: ['Ada'] }),
    );
    expect(JSON.parse(asked!.body).data.question).toBe('Permanently delete `cache.txt`?');
    const data = JSON.parse(decided!.body).data;
    expect(JSON.parse(decided!.body).type).toBe('approval.decided');
    expect(data).toMatchObject({ decision: 'approved', approvers: ['Ada'] });
    expect(data).not.toHaveProperty('question');
    expect(asked!.headers['webhook-id']).not.toBe(decided!.headers['webhook-id']);
  });

  it('carries a quorum step (approval.counted): the count, the number required and the approvers so far, never a credential', async () => {
    const [r] = await deliver(
      'standard',
      requested({ type: 'approval.counted', approvals: 1, approvalsRequired: 2, approvers: ['Ada'] }),
    );
    const event = new Webhook(SECRET).verify(r!.body, r!.headers) as { type: string; data: Record<string, unknown> };
    expect(event.type).toBe('approval.counted');
    expect(event.data).toEqual({
      approvalId: 'apr_1',
      url: 'https://mcp.example.com/approve/apr_1',
      tool: 'delete_file',
      audience: 'mcp-confirm',
      expiresAt: '2026-12-03T23:00:00.000Z',
      principalTag: 'tag_0123456789abcdef',
      approvers: ['Ada'],
      approvals: 1,
      approvalsRequired: 2,
    });
  });

  it('signs as the specification says: v1, base64 HMAC-SHA256 over id.timestamp.body (the oracle signs the same)', () => {
    const key = Buffer.from(SECRET.slice(6), 'base64');
    const ours = standardSignature(key, 'msg_1', 1_700_000_000, '{"a":1}');
    expect(ours).toBe(new Webhook(SECRET).sign('msg_1', new Date(1_700_000_000_000), '{"a":1}'));
    // control: another body, another signature
    expect(standardSignature(key, 'msg_1', 1_700_000_000, '{"a":2}')).not.toBe(ours);
  });
});

describe('slack: an incoming-webhook message', () => {
  it('has text, a mrkdwn section and a button linking the approval page', async () => {
    const [r] = await deliver('slack', requested());
    expect(r!.headers['content-type']).toBe('application/json');
    const message = JSON.parse(r!.body);
    expect(message.text).toBe('Approval requested: `delete_file` on `mcp-confirm`');
    expect(message.blocks).toEqual([
      {
        type: 'section',
        text: {
          type: 'mrkdwn',
          text: '*Approval requested: `delete_file` on `mcp-confirm`*\nExpires 2026-12-03T23:00:00.000Z',
        },
      },
      {
        type: 'actions',
        elements: [
          {
            type: 'button',
            text: { type: 'plain_text', text: 'Review and approve' },
            url: 'https://mcp.example.com/approve/apr_1',
          },
        ],
      },
    ]);
  });

  it('renders a hostile tool name and escapes Slack markup, so it opens no link or mention (control: a plain name)', async () => {
    const tool = 'x` <!channel> <https://evil.example|approve here> &\u202Eamp';
    const [hostile, plain] = await deliver('slack', requested({ tool }), requested({ tool: 'delete_file' }));
    const text = JSON.parse(hostile!.body).blocks[0].text.text as string;
    expect(text).not.toContain('<!channel>');
    expect(text).not.toContain('<https://');
    expect(text).not.toContain('\u202E');
    expect(text).toContain(
      renderValue(tool, { maxGraphemes: 80 }).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'),
    );
    expect(JSON.parse(plain!.body).blocks[0].text.text).toContain('`delete_file`');
  });

  it('shows the question only when included, and the outcome with its approvers', async () => {
    const [asked, decided] = await deliver(
      'slack',
      requested({ question: 'Permanently delete `a<b>.txt`?' }),
      requested({ type: 'approval.decided', decision: 'approved', approvers: ['Ada', 'Grace'] }),
    );
    expect(JSON.parse(asked!.body).blocks[0].text.text).toContain('\n\nPermanently delete `a&lt;b&gt;.txt`?');
    const d = JSON.parse(decided!.body);
    expect(d.text).toBe('Approval approved: `delete_file` on `mcp-confirm` by `Ada`, `Grace`');
    expect(d.blocks[0].text.text).not.toContain('Permanently');
    expect(d.blocks[1].elements[0].text.text).toBe('View');
  });
});

describe('a quorum step (approval.counted) in the human channels', () => {
  it('reads "1 of 2 approvals" with the approvers so far and links the page to approve (control: a request reads "Approval requested")', async () => {
    const step = requested({ type: 'approval.counted', approvals: 1, approvalsRequired: 2, approvers: ['Ada'] });
    const [slack] = await deliver('slack', step);
    const message = JSON.parse(slack!.body);
    expect(message.text).toBe('1 of 2 approvals: `delete_file` on `mcp-confirm` (by `Ada`)');
    expect(message.blocks[0].text.text).toBe(
      '*1 of 2 approvals: `delete_file` on `mcp-confirm` (by `Ada`)*\nExpires 2026-12-03T23:00:00.000Z',
    );
    expect(message.blocks[1].elements[0]).toEqual({
      type: 'button',
      text: { type: 'plain_text', text: 'Review and approve' },
      url: 'https://mcp.example.com/approve/apr_1',
    });
    const [ntfy, asked] = await deliver('ntfy', step, requested());
    expect(ntfy!.headers).toMatchObject({
      title: '1 of 2 approvals',
      click: 'https://mcp.example.com/approve/apr_1',
      priority: 'default',
      tags: 'ballot_box_with_check',
    });
    expect(ntfy!.body).toBe(
      '1 of 2 approvals: `delete_file` on `mcp-confirm` (by `Ada`). Open the link to review it; it expires 2026-12-03T23:00:00.000Z.',
    );
    expect(asked!.headers.title).toBe('Approval requested');
  });
});

describe('ntfy: a publish', () => {
  it('sends a neutral sentence when the question is not included, with Title, Click, Priority and Tags', async () => {
    const [r] = await deliver('ntfy', requested());
    expect(r!.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(r!.headers.title).toBe('Approval requested');
    expect(r!.headers.click).toBe('https://mcp.example.com/approve/apr_1');
    expect(r!.headers.priority).toBe('high');
    expect(r!.headers.tags).toBe('lock');
    expect(r!.body).toBe(
      'Approval requested: `delete_file` on `mcp-confirm`. Open the link to review it; it expires 2026-12-03T23:00:00.000Z.',
    );
  });

  it('sends the question as the body when included, its controls made visible (control: no question, no question text)', async () => {
    const question = 'Permanently delete `cache.txt`?\nIt holds 12 bytes.\u202E\u0007';
    const [withQ, decided] = await deliver(
      'ntfy',
      requested({ question }),
      requested({ type: 'approval.decided', decision: 'declined' }),
    );
    expect(withQ!.body).toBe('Permanently delete `cache.txt`?\nIt holds 12 bytes.⟨U+202E⟩⟨U+0007⟩');
    expect(decided!.body).toBe('Approval declined: `delete_file` on `mcp-confirm`.');
    expect(decided!.body).not.toContain('Permanently');
    expect(decided!.headers.title).toBe('Approval declined');
    expect(decided!.headers.priority).toBe('default');
    expect(decided!.headers.tags).toBe('x');
  });

  it('cuts a long question to the ntfy message size in bytes, marked (control: a short one whole)', async () => {
    const long = '削除'.repeat(3_000);
    const [cut, whole] = await deliver(
      'ntfy',
      requested({ question: long }),
      requested({ question: '削除'.repeat(10) }),
    );
    expect(Buffer.byteLength(cut!.body)).toBeLessThanOrEqual(4_000);
    expect(Buffer.byteLength(cut!.body)).toBeGreaterThan(3_900);
    expect(cut!.body.endsWith('…')).toBe(true);
    expect(long.startsWith(cut!.body.slice(0, -1))).toBe(true);
    expect(whole!.body).toBe('削除'.repeat(10));
  });

  it('renders a hostile tool name in the neutral sentence', async () => {
    const tool = 'rm\nApproved already: tap to confirm\u202E';
    const [r] = await deliver('ntfy', requested({ tool }));
    expect(r!.body).toContain(renderValue(tool, { maxGraphemes: 80 }));
    expect(r!.body).not.toContain('\n');
    expect(r!.body).not.toContain('\u202E');
  });
});
