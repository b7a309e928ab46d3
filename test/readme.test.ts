/** The README's generated parts are what the code produces now. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { questionExamples } from '../scripts/questionExamples.js';

const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8');

function between(start: string, end: string): string {
  const a = readme.indexOf(start);
  const b = readme.indexOf(end);
  if (a < 0 || b < a) throw new Error(`README lacks ${start} … ${end}`);
  return readme.slice(a + start.length, b).replace(/^\n/, '');
}

describe('README', () => {
  it('shows the before/after question examples exactly as scripts/questionExamples.ts renders them', () => {
    expect(between('<!-- question-examples:start -->', '<!-- question-examples:end -->')).toBe(questionExamples());
  });

  it('starts with the demo command and the test command', () => {
    const blocks = [...readme.matchAll(/```sh\n([^\n]+)\n```/g)].map((m) => m[1]);
    expect(blocks.slice(0, 2)).toEqual(['npm run demo -- --yes', 'npm test']);
  });
});
