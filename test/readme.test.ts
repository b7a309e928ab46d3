/** The README's commands, and the docs' generated parts, are what the code produces now. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { questionExamples } from '../scripts/questionExamples.js';

const REPO = join(import.meta.dirname, '..');
const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
const questionPage = readFileSync(join(REPO, 'docs', 'question.md'), 'utf8');

function between(text: string, start: string, end: string): string {
  const a = text.indexOf(start);
  const b = text.indexOf(end);
  if (a < 0 || b < a) throw new Error(`the page lacks ${start} … ${end}`);
  return text.slice(a + start.length, b).replace(/^\n/, '');
}

describe('README', () => {
  it('starts with the demo command and the test command', () => {
    const blocks = [...readme.matchAll(/```sh\n([^\n]+)\n```/g)].map((m) => m[1]);
    expect(blocks.slice(0, 2)).toEqual(['npm run demo -- --yes', 'npm test']);
  });
});

describe('docs/question.md', () => {
  it('shows the before/after question examples exactly as scripts/questionExamples.ts renders them', () => {
    expect(between(questionPage, '<!-- question-examples:start -->', '<!-- question-examples:end -->')).toBe(
      questionExamples(),
    );
  });
});
