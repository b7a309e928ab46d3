/**
 * The docs stay true (issue 20 part 7): every relative link and `#anchor` in README.md, docs/*.md,
 * docs/api/** and examples/**\/README.md resolves as GitHub resolves it, and the README stays a
 * front door (under 12,000 characters).
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { anchorsOf, brokenLinks, githubSlug, markdownFilesUnder, relativeLinksOf } from './helpers/markdownLinks.js';

const REPO = join(import.meta.dirname, '..');

const files = [
  'README.md',
  ...markdownFilesUnder(REPO, 'docs').filter((f) => !f.startsWith('docs/api/') && f.split('/').length === 2),
  ...markdownFilesUnder(REPO, 'docs/api'),
  ...markdownFilesUnder(REPO, 'examples', (name) => name === 'README.md'),
];

describe('links in the docs', () => {
  it('every relative link and #anchor in README.md, docs/ and examples/ resolves', () => {
    const broken = brokenLinks(REPO, files).map((b) => `${b.file}:${b.line}: ${b.target} (${b.reason})`);
    expect(broken).toEqual([]);
    // The check saw the docs: the README links to several pages, and anchors are among what it checked.
    const readmeLinks = relativeLinksOf(readFileSync(join(REPO, 'README.md'), 'utf8'));
    expect(readmeLinks.filter((l) => l.target.startsWith('docs/')).length).toBeGreaterThan(10);
    expect(files.filter((f) => f.startsWith('docs/')).length).toBeGreaterThan(10);
  });

  describe('the checker (control: it does find what is broken)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-links-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(join(dir, 'docs'));
    writeFileSync(
      join(dir, 'docs', 'page.md'),
      [
        '# Page',
        '',
        '## The `delete_file` tool',
        '',
        '## Passkey approval over `--http`',
        '',
        '## Same',
        '## Same',
        '<a id="custom"></a>',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(dir, 'README.md'),
      [
        '# Front',
        '[ok](docs/page.md) [ok](docs/page.md#the-delete_file-tool) [ok](docs/page.md#passkey-approval-over---http)',
        '[ok](docs/page.md#same-1) [ok](docs/page.md#custom) [ok](#front) [ok](https://example.com/nowhere)',
        '[missing file](docs/nope.md)',
        '```md',
        '[in a code block](docs/nope-too.md)',
        '```',
        '`[in a code span](docs/nope-three.md)` [missing anchor](docs/page.md#nowhere) [self](#nowhere-here)',
        '<img src="docs/missing.png">',
        '',
      ].join('\n'),
    );

    it('reports a missing file, a missing anchor and a missing image with file and line, and nothing in code', () => {
      expect(brokenLinks(dir, ['README.md', 'docs/page.md']).map((b) => `${b.file}:${b.line}: ${b.target}`)).toEqual([
        'README.md:4: docs/nope.md',
        'README.md:8: docs/page.md#nowhere',
        'README.md:8: #nowhere-here',
        'README.md:9: docs/missing.png',
      ]);
    });

    it("slugs headings as GitHub does: code and punctuation dropped, spaces to '-', repeats numbered", () => {
      expect(githubSlug('Passkey approval over `--http`')).toBe('passkey-approval-over---http');
      expect(githubSlug('Proxy: confirmation in front of any MCP server')).toBe(
        'proxy-confirmation-in-front-of-any-mcp-server',
      );
      expect(githubSlug('`ConfirmError`: refusals on the wire (`ERR_CONFIRM_*`)')).toBe(
        'confirmerror-refusals-on-the-wire-err_confirm_',
      );
      expect([...anchorsOf('## Same\n\n## Same\n\n## Same\n')]).toEqual(['same', 'same-1', 'same-2']);
    });
  });
});

describe('the README is a front door', () => {
  it('is under 12,000 characters', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    expect([...readme].length).toBeLessThan(12_000);
  });
});
