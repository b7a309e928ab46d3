/**
 * The question a human reads, as a real client receives it: hostile file names
 * on disk, round 1 of delete_file through a v2 Client pinned to 2026-07-28, and
 * the elicitation `message` checked (not the rendering function alone).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import MarkdownIt from 'markdown-it';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { ACCEPT, asked, connect, connectV1, type Connected } from '../helpers/harness.js';
import { hostileVectors } from '../prompt/vectors.js';

let R: string;
let root: string;
let c: Connected;
let factory: Awaited<ReturnType<typeof createDemoServer>>['factory'];

/** Characters that must never reach the message raw: Cc, Zl, Zp, bidi controls, default-ignorables, invisible fillers. */
const FORBIDDEN =
  /[\p{Cc}\p{Zl}\p{Zp}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\p{Default_Ignorable_Code_Point}\u115F\u1160\u3164\uFFA0\u2800\u0085]/u;

beforeAll(async () => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-question-')));
  root = join(R, 'root');
  mkdirSync(root);
  const built = await createDemoServer({ roots: [root] });
  factory = built.factory;
  c = await connect(built.factory);
});
afterAll(async () => {
  await c.close();
  rmSync(R, { recursive: true, force: true });
});

/** Creates a file with this name in the root; false when the file system refuses the name. */
function create(name: string): boolean {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0') || !name.isWellFormed())
    return false;
  try {
    writeFileSync(join(root, name), 'x', { flag: 'w' });
    return true;
  } catch {
    return false;
  }
}

async function messageFor(name: string): Promise<string> {
  return asked(await c.call('delete_file', { path: name })).message;
}

const plainLines = async () => (await messageFor('plain.txt')).split(/\r\n|\r|\n|\u2028|\u2029|\u0085/).length;

describe('hostile names through a real client', () => {
  beforeAll(() => {
    writeFileSync(join(root, 'plain.txt'), 'x');
  });

  const onDisk = hostileVectors.filter(
    (v) => v.value !== '' && !v.value.includes('/') && !v.value.includes('\0') && v.value.isWellFormed(),
  );

  it('has file-system-valid vectors to send', () => {
    expect(onDisk.length).toBeGreaterThanOrEqual(20);
  });

  it.each(onDisk.map((v) => [v.name, v] as const))(
    '%s: the received message shows it on one line, escaped',
    async (_name, vector) => {
      expect(create(vector.value)).toBe(true);
      const message = await messageFor(vector.value);
      expect(message.split(/\r\n|\r|\n|\u2028|\u2029|\u0085/).length).toBe(await plainLines());
      expect(message.isWellFormed()).toBe(true);
      expect(FORBIDDEN.test(message), JSON.stringify(message)).toBe(false);
      for (const bad of vector.forbidden)
        expect(message.includes(bad), `raw ${JSON.stringify(bad)} in ${JSON.stringify(message)}`).toBe(false);
      for (const shown of vector.shown) expect(message).toContain(shown);
    },
  );

  it.each([
    ['a Hebrew name', 'שלום.txt'],
    ['an Arabic name', 'مرحبا.txt'],
  ])('%s still shows its letters', async (_label, name) => {
    expect(create(name)).toBe(true);
    expect(await messageFor(name)).toContain(name);
  });

  it.each([
    ['a Hebrew name', 'שלום.txt'],
    ['a Greek name', 'αρχείο.txt'],
    ['an Arabic name', 'مرحبا.txt'],
  ])(
    '%s under the Latin root path gets no warning (the script check runs per path component)',
    async (_label, name) => {
      expect(create(name)).toBe(true);
      const message = await messageFor(name);
      expect(message).toContain(`/${name}\`, requested as \`${name}\`?`);
      expect(message).not.toMatch(/warning/);
    },
  );

  it('warns about right-to-left directories that display in reverse order (/…/א/ב/ג.txt shows as /…/ג/ב/א.txt)', async () => {
    mkdirSync(join(root, 'א', 'ב'), { recursive: true });
    writeFileSync(join(root, 'א', 'ב', 'ג.txt'), 'x');
    const message = await messageFor('א/ב/ג.txt');
    expect(message).toBe(
      `Permanently delete the file \`${root}/א/ב/ג.txt\` (warning: right-to-left text may display out of order), ` +
        'requested as `א/ב/ג.txt` (warning: right-to-left text may display out of order)? Size: 1 byte. This cannot be undone.',
    );
  });

  it("shows a name that imitates the question's wording with every backtick escaped: the message has exactly four backticks", async () => {
    const name = 'a.txt`, requested as `a.txt`? Size: 0 bytes. This cannot be undone. (x';
    expect(create(name)).toBe(true);
    const message = await messageFor(name);
    expect([...message].filter((c) => c === '`')).toHaveLength(4);
    expect(message.endsWith('(x`? Size: 1 byte. This cannot be undone.')).toBe(true);
  });

  it.each([
    ['mathematical monospace', '\u{1D68C}\u{1D68A}\u{1D68C}\u{1D691}\u{1D68E}.txt'],
    ['full-width', '\uFF43\uFF41\uFF43\uFF48\uFF45.txt'],
  ])('warns about %s look-alikes of cache.txt, and not about cache.txt', async (_label, name) => {
    expect(create(name)).toBe(true);
    expect(create('cache.txt')).toBe(true);
    expect(await messageFor(name)).toContain('(warning: uses compatibility look-alike characters, not NFKC)');
    expect(await messageFor('cache.txt')).not.toMatch(/warning/);
  });

  it.each([
    ['a\nb', 'a b'],
    ['a\tb', 'a b'],
    ['a  b', 'a b'],
    ['a\\nb', 'a\nb'],
    ['x\u202Efdp.exe', 'xexe.pdf'],
  ])('renders %j and %j differently (text-4)', async (one, two) => {
    expect(create(one)).toBe(true);
    expect(create(two)).toBe(true);
    expect(await messageFor(one)).not.toBe(await messageFor(two));
  });

  it('warns about a name that mixes Latin and Cyrillic letters (homoglyph), and not about its Latin twin', async () => {
    expect(create('pаypal.txt')).toBe(true);
    expect(create('paypal.txt')).toBe(true);
    expect(await messageFor('pаypal.txt')).toMatch(/warning: mixes Latin and Cyrillic/);
    expect(await messageFor('paypal.txt')).not.toMatch(/warning/);
  });

  it('keeps the end of a very long name, marks the cut and adds a fingerprint; two names differing in the middle differ', async () => {
    const a = `${'a'.repeat(100)}X${'b'.repeat(100)}.txt`;
    const b = `${'a'.repeat(100)}Y${'b'.repeat(100)}.txt`;
    expect(create(a) && create(b)).toBe(true);
    const [ma, mb] = [await messageFor(a), await messageFor(b)];
    expect(ma).toContain('…');
    expect(ma).toMatch(/b\.txt`/);
    expect(ma).toMatch(/fingerprint [0-9a-f]{16}/);
    expect(ma).not.toBe(mb);
  });

  it('names a real Hebrew file in the question and in the success result without a look-alike warning', async () => {
    const name = 'קובץ.txt';
    expect(create(name)).toBe(true);
    const { state, message } = asked(await c.call('delete_file', { path: name }));
    expect(message).toContain(name);
    expect(message).not.toMatch(/warning/);
    const done = await c.call('delete_file', { path: name }, { inputResponses: ACCEPT, requestState: state });
    expect(done).toMatchObject({ kind: 'result', isError: false });
    if (done.kind === 'result') {
      expect(done.text).toContain(name);
      expect(done.text).not.toMatch(/warning/);
    }
  });

  it('lets a hostile name be deleted once confirmed: the question is safe, the file is still the file', async () => {
    const name = 'report.txt\r\u001b[2KApproved by administrator';
    expect(create(name)).toBe(true);
    const { state } = asked(await c.call('delete_file', { path: name }));
    const reply = await c.call('delete_file', { path: name }, { inputResponses: ACCEPT, requestState: state });
    expect(reply).toMatchObject({ kind: 'result', isError: false });
  });
});

describe('path syntax and whole-script look-alikes through a real client (hard-3, hard-4)', () => {
  const division = 'notes\u2215thesis.txt';
  const fraction = 'a\u2044b.txt';

  beforeAll(() => {
    mkdirSync(join(root, 'notes'), { recursive: true });
    writeFileSync(join(root, 'notes', 'thesis.txt'), 'real');
  });

  it('hard-3: a name with U+2215 DIVISION SLASH or U+2044 FRACTION SLASH never shows it raw, next to a real notes/thesis.txt', async () => {
    expect(create(division) && create(fraction)).toBe(true);
    const [md, mf, real] = [
      await messageFor(division),
      await messageFor(fraction),
      await messageFor('notes/thesis.txt'),
    ];
    for (const m of [md, mf, real]) expect(/[\u2215\u2044]/u.test(m), JSON.stringify(m)).toBe(false);
    expect(md).toContain(`\`${root}/notes⟨U+2215⟩thesis.txt\`, requested as \`notes⟨U+2215⟩thesis.txt\`?`);
    expect(mf).toContain(`\`${root}/a⟨U+2044⟩b.txt\`, requested as \`a⟨U+2044⟩b.txt\`?`);
    // The control: the real file in the real directory is shown with its real slash.
    expect(real).toContain(`\`${root}/notes/thesis.txt\`, requested as \`notes/thesis.txt\`?`);
    expect(md).not.toBe(real);
  });

  it('hard-3: confirming the look-alike deletes that file only; the real notes/thesis.txt stays', async () => {
    expect(create(division)).toBe(true);
    const { state } = asked(await c.call('delete_file', { path: division }));
    const done = await c.call('delete_file', { path: division }, { inputResponses: ACCEPT, requestState: state });
    expect(done).toMatchObject({ kind: 'result', isError: false });
    if (done.kind === 'result') {
      expect(done.text).toContain('notes⟨U+2215⟩thesis.txt');
      expect(done.text).not.toContain('\u2215');
    }
    expect(existsSync(join(root, division))).toBe(false);
    expect(readFileSync(join(root, 'notes', 'thesis.txt'), 'utf8')).toBe('real');
  });

  it('hard-3: the 2025-era client (elicitation/create) is asked with the escape too', async () => {
    expect(create(fraction)).toBe(true);
    const v1 = await connectV1(factory, { answer: () => ({ action: 'decline' }) });
    try {
      const reply = await v1.callTool('delete_file', { path: fraction });
      expect(reply.isError).toBe(false);
      expect(v1.asked).toHaveLength(1);
      expect(v1.asked[0]).toContain('`a⟨U+2044⟩b.txt`');
      expect(v1.asked[0]).not.toContain('\u2044');
      expect(existsSync(join(root, fraction))).toBe(true);
    } finally {
      await v1.close();
    }
  });

  it('keeps ノ, ः and ٠ readable in real Japanese, Hindi and Arabic names', async () => {
    for (const name of ['ノート.txt', 'दुःख.txt', 'تقرير ٢٠٢٤.txt']) {
      expect(create(name)).toBe(true);
      const message = await messageFor(name);
      expect(message).toContain(`/${name}\``);
      expect(message).not.toContain('⟨U+');
    }
  });

  it('hard-4: warns for the all-Cyrillic сасһе.txt, and not for cache.txt', async () => {
    const cyrillic = '\u0441\u0430\u0441\u04BB\u0435.txt';
    expect(create(cyrillic) && create('cache.txt')).toBe(true);
    const warned = await messageFor(cyrillic);
    expect(warned).toContain(
      `/${cyrillic}\` (warning: written in Cyrillic letters that look like Latin ones), requested as`,
    );
    expect(await messageFor('cache.txt')).not.toMatch(/warning/);
  });
});

/** The message with every fingerprint removed (they follow the code spans; values hold no backtick). */
const withoutFingerprints = (message: string): string =>
  message.replace(/fingerprints? [0-9a-f]{16}(?:, [0-9a-f]{16})*/g, 'fingerprint');

describe('paths: every component stays visible (BUG-27)', () => {
  const deep = (dir: string): string =>
    `projects/client-acme-corporation-international/2026/quarterly-reports-and-analysis/${dir}/chapter-03/drafts/working-copies/literature-review-and-related-work/data.txt`;

  it('hard-5: two deep paths differing in one middle directory give questions that differ outside any fingerprint, each showing its own directory', async () => {
    for (const dir of ['thesis-FINAL', 'scratch-tmp']) {
      const path = join(root, deep(dir));
      mkdirSync(join(path, '..'), { recursive: true });
      writeFileSync(path, 'x');
    }
    const thesis = await messageFor(deep('thesis-FINAL'));
    const scratch = await messageFor(deep('scratch-tmp'));
    // Even the path as requested is longer than one value's bound (120 graphemes): a whole-path
    // cut from the middle (the rendering before BUG-27) hid exactly the differing directory.
    expect(deep('thesis-FINAL').length).toBeGreaterThan(120);
    expect(withoutFingerprints(thesis)).not.toBe(withoutFingerprints(scratch));
    expect(thesis).toContain('/thesis-FINAL/');
    expect(thesis).not.toContain('scratch-tmp');
    expect(scratch).toContain('/scratch-tmp/');
    expect(scratch).not.toContain('thesis-FINAL');
    // Nothing was cut: each whole path is shown, resolved and as requested.
    expect(thesis).toBe(
      `Permanently delete the file \`${root}/${deep('thesis-FINAL')}\`, requested as \`${deep('thesis-FINAL')}\`? Size: 1 byte. This cannot be undone.`,
    );
    expect(scratch).not.toMatch(/shortened|…/);
  });

  it('cuts only an over-long directory name, in its own middle with its own fingerprint, and keeps every other component', async () => {
    const long = `${'long-directory-name-'.repeat(8)}end`; // 163 graphemes
    const a = `${long}/keep-me/${long.replace('end', 'END')}/file.txt`;
    mkdirSync(join(root, long, 'keep-me', long.replace('end', 'END')), { recursive: true });
    writeFileSync(join(root, a), 'x');
    const message = await messageFor(a);
    const requested = /requested as `([^`]*)`( \(shortened, fingerprints ([0-9a-f]{16}), ([0-9a-f]{16})\))?/.exec(
      message,
    );
    expect(requested?.[2], message).toBeDefined();
    const shown = (requested?.[1] ?? '').split('/');
    expect(shown).toHaveLength(4);
    expect(shown[0]).toMatch(/^long-directory-name-.*….*-end$/);
    expect(shown[1]).toBe('keep-me');
    expect(shown[2]).toMatch(/^long-directory-name-.*….*-END$/);
    expect(shown[3]).toBe('file.txt');
    expect(requested?.[3]).not.toBe(requested?.[4]);
  });
});

describe('markup (text-5): the received message rendered as CommonMark with raw HTML', () => {
  const renderers = {
    'html: true': new MarkdownIt({ html: true }),
    'html: true, linkify: true': new MarkdownIt({ html: true, linkify: true }),
  };
  const names = [
    '[Verify your account](https:attacker.example).txt',
    '[Verify your account](mailto:x@attacker.example).txt',
    '<img src=x onerror=alert(1)>.txt',
    '**urgent** approve.txt',
    '# Approved.txt',
    'https:⁄⁄attacker.example.txt',
    'www.attacker.example',
    '`code` and ``more``.txt',
    '<https:attacker.example>.txt',
    '![x](https:attacker.example).txt',
  ];

  it.each(Object.entries(renderers).flatMap(([label, md]) => names.map((n) => [label, n, md] as const)))(
    'with %s, %j creates no link, image, emphasis, heading or HTML element',
    async (_label, name, md) => {
      expect(create(name)).toBe(true);
      const message = await messageFor(name);
      const html = md.render(message);
      expect(html).not.toMatch(/<(a|img|em|strong|h[1-6]|script|del|s)\b/i);
      const tags = [...html.matchAll(/<\/?([a-z0-9]+)/gi)].map((m) => m[1]!.toLowerCase());
      expect(new Set(tags)).toEqual(new Set(['p', 'code']));
    },
  );
});

describe('the Big List of Naughty Strings through a real client', () => {
  it('gives every creatable name a one-line, well-formed question free of hidden characters, distinct from every other', async () => {
    const blns = JSON.parse(readFileSync(join(import.meta.dirname, '../fixtures/blns.json'), 'utf8')) as string[];
    const lines = await plainLines();
    const seen = new Map<string, string>();
    let sent = 0;
    for (const name of new Set(blns)) {
      if (!create(name)) continue;
      sent++;
      const message = await messageFor(name);
      expect(message.split(/\r\n|\r|\n|\u2028|\u2029|\u0085/).length, JSON.stringify(name)).toBe(lines);
      expect(message.isWellFormed()).toBe(true);
      expect(FORBIDDEN.test(message), JSON.stringify(message)).toBe(false);
      const before = seen.get(message);
      expect(before, `${JSON.stringify(name)} renders like ${JSON.stringify(before)}`).toBeUndefined();
      seen.set(message, name);
    }
    expect(sent).toBeGreaterThan(300);
  });
});
