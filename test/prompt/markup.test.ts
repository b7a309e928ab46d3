import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import MarkdownIt from 'markdown-it';
import { describe, expect, it } from 'vitest';
import { question, renderValue, renderValueParts } from '../../src/prompt/render.js';
import { hostileVectors } from './vectors.js';

const blns = JSON.parse(readFileSync(new URL('../fixtures/blns.json', import.meta.url), 'utf8')) as string[];

/** GitHub-style: raw HTML allowed; once without and once with linkify. */
const renderers = [
  ['markdown-it html', new MarkdownIt({ html: true })],
  ['markdown-it html+linkify', new MarkdownIt({ html: true, linkify: true })],
  ['markdown-it commonmark html', new MarkdownIt('commonmark', { html: true })],
] as const;

const markupValues = [
  '[Verify your account](https://attacker.example).txt',
  '<img src=x onerror=alert(1)>.txt',
  '<https://attacker.example>',
  'https://attacker.example/login',
  'www.attacker.example',
  'user@attacker.example',
  'mailto:user@attacker.example',
  'javascript:alert(1)',
  '*em* _em_ **strong** __strong__',
  '~~gone~~',
  '# heading',
  '###### small heading',
  '===',
  '---',
  '> quote',
  '- item',
  '1. item',
  '![img](https://attacker.example/x.png)',
  '[ref][1]',
  '[1]: https://attacker.example',
  '<script>alert(1)</script>',
  '<a href="https://attacker.example">x</a>',
  '<!-- comment -->',
  '<![CDATA[x]]>',
  '<?php echo 1; ?>',
  '<div>\n<b>x</b>\n</div>',
  '&lt;b&gt; &amp; &#x3C;i&#x3E;',
  '\\`x\\`',
  '`',
  '``',
  '` `',
  '`a',
  'a`',
  '```js',
  '~~~',
  '` [x](https://attacker.example) `',
  '``` ```',
  ' `x` ',
  '| a | b |\n|---|---|',
  'line\\',
  'two trailing spaces  ',
  '    indented code',
  `${'[x](https://attacker.example) '.repeat(20)}<img src=x>`,
  `**${'\u202E'.repeat(30)}**`,
];

const unescapeHtml = (s: string): string =>
  s.replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&quot;', '"').replaceAll('&amp;', '&');

/**
 * Renders the question as Markdown and checks that the value produced nothing but one literal
 * code span whose text is exactly what renderValue showed.
 */
function checkMarkup(md: InstanceType<typeof MarkdownIt>, value: string, atLineStart: boolean): void {
  const q = atLineStart ? question`${value} will be deleted.` : question`Permanently delete ${value}?`;
  const html = md.render(q);
  expect(html).not.toMatch(/<(a|img|em|strong|s|del|h[1-6]|script|div|b|i|blockquote|ul|ol|li|pre|table|br)\b/i);
  const codes = [...html.matchAll(/<code>([\s\S]*?)<\/code>/g)].map((m) => unescapeHtml(m[1] ?? ''));
  expect(codes).toEqual([renderValueParts(value).body]);
  // Nothing but the paragraph and the code span is markup.
  const rest = html.replace(/<\/?(p|code)>/g, '');
  expect(rest).not.toContain('<');
}

describe.each(renderers)('markup-proof under %s', (_name, md) => {
  it.each(markupValues)('keeps %j a literal code span in mid-sentence', (value) => {
    checkMarkup(md, value, false);
  });

  it.each(markupValues)('keeps %j a literal code span at the start of a line', (value) => {
    checkMarkup(md, value, true);
  });

  it('keeps every hostile vector a literal code span', () => {
    for (const { value } of hostileVectors) checkMarkup(md, value, false);
  });

  it('keeps every blns string a literal code span', () => {
    for (const value of blns) checkMarkup(md, value, false);
  });

  it('keeps arbitrary markup-heavy strings a literal code span (property)', () => {
    const unit = fc.constantFrom(
      '`',
      '``',
      '*',
      '_',
      '~',
      '[',
      ']',
      '(',
      ')',
      '<',
      '>',
      '!',
      '#',
      '&',
      ';',
      '\\',
      '|',
      '-',
      '=',
      ':',
      ' ',
      '  ',
      '\n',
      'a',
      'https://',
      'www.',
      'x.example',
      '@',
      'img',
      'script',
      '/',
      '"',
      "'",
      '&amp;',
    );
    fc.assert(
      fc.property(
        fc.array(unit, { maxLength: 24 }).map((a) => a.join('')),
        fc.boolean(),
        (value, start) => {
          checkMarkup(md, value, start);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('plain-text clients', () => {
  it('shows the value between backticks with no entity or backslash escaping', () => {
    expect(renderValue('<b>&amp;</b>')).toBe('`<b>&amp;</b>`');
  });
});
