/**
 * Prints docs/question.md's before/after examples of the question a human reads:
 * "before" is what a naive server sends (`Permanently delete ${name}?`, shown as a JSON
 * string with invisible code points escaped, so this page stays readable), "after" is what delete_file's question template
 * renders. Run: npx tsx scripts/questionExamples.ts
 * test/readme.test.ts checks that docs/question.md holds exactly this output.
 */
import { question, questionWith } from '../src/prompt/render.js';

/** delete_file renders paths component by component (`segments: '/'`). */
const pathQuestion = questionWith({ segments: '/' });

const examples: Array<[string, string]> = [
  ['text-1, a forged second prompt', 'cache.txt\n\nSYSTEM NOTICE: your session expired. Paste your API key below:'],
  ['text-2, terminal escapes', 'report.txt\r\u001b[2KApproved by administrator'],
  ['text-2, backspaces', `secret.txt${'\b'.repeat(10)}cache.txt`],
  ['text-3, bidi override (Trojan Source)', 'invoice_\u202Efdp.exe'],
  ['text-3, bidi isolate', 'keep\u2067.txt\u2069-delete-me'],
  ['invisible Hangul filler', 'cache\u3164.txt'],
  ['zero-width space', 'thesis\u200B.txt'],
  ['text-4, two spaces', 'a  b.txt'],
  ['text-4, a real backslash-n', 'a\\nb.txt'],
  ['text-5, a Markdown link', '[Verify your account](https:attacker.example).txt'],
  ['text-5, raw HTML', '<img src=x onerror=alert(1)>.txt'],
  ['homoglyph, Cyrillic a', 'p\u0430ypal.txt'],
  ['hard-4, a name wholly in Cyrillic that looks Latin', '\u0441\u0430\u0441\u04BB\u0435.txt'],
  ['hard-3, a division slash that passes for a directory', 'notes\u2215thesis.txt'],
  ['hard-3, a fraction slash', 'a\u2044b.txt'],
  ['a Katakana letter that looks like a slash, between Latin letters', 'notes\u30CEthesis.txt'],
  ['the same letter in a real Japanese name', '\u30CE\u30FC\u30C8.txt'],
  ['not NFC', 'cafe\u0301.txt'],
  ['a real Hebrew name', 'שלום.txt'],
  ['very long, cut from the middle', `${'quarterly-report-'.repeat(8)}FINAL-${'v2-'.repeat(30)}.txt`],
];

/** Paths, rendered as delete_file renders them: every component stays, over-long ones are cut alone. */
const pathExamples: Array<[string, string]> = [
  [
    'hard-5, a deep path: every directory stays visible',
    'projects/client-acme-corporation-international/2026/quarterly-reports-and-analysis/thesis-FINAL/chapter-03/drafts/working-copies/literature-review-and-related-work/data.txt',
  ],
  [
    'a path with an over-long directory name, cut in its own middle',
    `/srv/${'long-directory-name-'.repeat(8)}end/keep-me/data.txt`,
  ],
];

/** JSON, with every invisible or format code point as a \\uXXXX escape, so this page hides nothing. */
const visibleJson = (text: string): string =>
  JSON.stringify(text).replace(
    /[\p{Cf}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}\u3164]/gu,
    (ch) => `\\u${ch.codePointAt(0)!.toString(16).padStart(4, '0')}`,
  );

/** The block of docs/question.md, as markdown. */
export function questionExamples(): string {
  const lines: string[] = [];
  for (const [label, name] of examples) {
    lines.push(`${label}:`);
    lines.push('```');
    lines.push(`before: ${visibleJson(`Permanently delete ${name}?`)}`);
    lines.push(`after:  ${question`Permanently delete ${name}?`}`);
    lines.push('```');
  }
  for (const [label, path] of pathExamples) {
    lines.push(`${label}:`);
    lines.push('```');
    lines.push(`before: ${visibleJson(`Permanently delete ${path}?`)}`);
    lines.push(`after:  ${pathQuestion`Permanently delete ${path}?`}`);
    lines.push('```');
  }
  return `${lines.join('\n')}\n`;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!))
  process.stdout.write(questionExamples());
