/**
 * Reads the relative links and the anchors of markdown files, as GitHub renders them, so a test can
 * say which link of which file and line points nowhere.
 *
 * - Links: inline `[text](target)` and `![alt](target)` outside fenced code blocks and inline code
 *   spans, plus `href="…"` and `src="…"` of inline HTML. Absolute URLs (`https:`, `mailto:`, `//…`)
 *   are not followed.
 * - Anchors of a file: its ATX headings (`#` to `######`, outside fenced code blocks) turned into
 *   GitHub's slugs (lower case; every character that is not a letter, mark, digit, connector
 *   punctuation, space or `-` removed; each space a `-`; a repeated slug gets `-1`, `-2`, …), plus the
 *   `id` and `name` attributes of inline HTML.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export interface MarkdownLink {
  /** 1-based line of the file. */
  line: number;
  /** The link target as written, e.g. `docs/proxy.md#policy`. */
  target: string;
}

/** A link that does not resolve: `file:line: target (why)`. */
export interface BrokenLink {
  file: string;
  line: number;
  target: string;
  reason: string;
}

/** Each line of the file with its fenced code blocks blanked out (line numbers kept). */
function proseLines(text: string): string[] {
  const lines = text.split('\n');
  let fence: string | undefined;
  return lines.map((line) => {
    const open = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence === undefined) {
      if (open) {
        fence = open[1];
        return '';
      }
      return line;
    }
    if (open && open[1]![0] === fence[0] && open[1]!.length >= fence.length && line.trim() === open[1])
      fence = undefined;
    return '';
  });
}

/** The line without its inline code spans (`` `…` ``, any number of backticks). */
function withoutCodeSpans(line: string): string {
  return line.replace(/(`+)(?:(?!\1)[\s\S])*?\1/g, '');
}

/** GitHub's slug of a heading's text (github-slugger, without the repeat counter). */
export function githubSlug(headingText: string): string {
  const rendered = headingText
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '');
  return rendered
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a file offers: heading slugs (repeats numbered as GitHub does) and HTML ids. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(text)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const slug = githubSlug(heading[1]!);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const m of withoutCodeSpans(line).matchAll(/<[a-z][^>]*?\s(?:id|name)="([^"]+)"/gi)) anchors.add(m[1]!);
  }
  return anchors;
}

/** Every link of a file that is not an absolute URL. */
export function relativeLinksOf(text: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  proseLines(text).forEach((raw, index) => {
    const line = withoutCodeSpans(raw);
    const targets: string[] = [];
    for (const m of line.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g))
      targets.push(m[1]!.replace(/^<|>$/g, ''));
    for (const m of line.matchAll(/\s(?:href|src)="([^"]+)"/g)) targets.push(m[1]!);
    for (const target of targets) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue;
      links.push({ line: index + 1, target });
    }
  });
  return links;
}

/**
 * Checks every relative link of the given markdown files (paths relative to `root`): the file or
 * folder it names exists, and its `#anchor`, if any, is an anchor of the markdown file it names (or
 * of the file itself for `#anchor` alone). Returns what does not resolve, in file and line order.
 */
export function brokenLinks(root: string, files: readonly string[]): BrokenLink[] {
  const broken: BrokenLink[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchorsFor = (path: string): Set<string> => {
    let anchors = anchorCache.get(path);
    if (!anchors) {
      anchors = anchorsOf(readFileSync(path, 'utf8'));
      anchorCache.set(path, anchors);
    }
    return anchors;
  };
  for (const file of files) {
    const path = join(root, file);
    for (const { line, target } of relativeLinksOf(readFileSync(path, 'utf8'))) {
      const hash = target.indexOf('#');
      const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
      const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
      const resolved = pathPart === '' ? path : resolve(dirname(path), pathPart.split('?')[0]!);
      if (!existsSync(resolved)) {
        broken.push({ file, line, target, reason: `no such file: ${relative(root, resolved)}` });
        continue;
      }
      if (anchor === undefined) continue;
      if (!resolved.endsWith('.md') || statSync(resolved).isDirectory()) {
        broken.push({ file, line, target, reason: 'an anchor into a file that is not markdown' });
        continue;
      }
      if (!anchorsFor(resolved).has(anchor)) {
        broken.push({ file, line, target, reason: `no heading or id "${anchor}" in ${relative(root, resolved)}` });
      }
    }
  }
  return broken;
}

/** The markdown files under `dir` (relative to `root`), recursively, sorted; none if it is missing. */
export function markdownFilesUnder(
  root: string,
  dir: string,
  nameFilter: (name: string) => boolean = (n) => n.endsWith('.md'),
): string[] {
  const start = join(root, dir);
  if (!existsSync(start)) return [];
  const found: string[] = [];
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      if (entry.name === 'node_modules') continue;
      const full = join(folder, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (nameFilter(entry.name)) found.push(relative(root, full));
    }
  };
  walk(start);
  return found.sort();
}
