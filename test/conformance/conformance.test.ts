/**
 * The MCP conformance suite (@modelcontextprotocol/conformance 0.2.0-alpha.12 on Node 22.23.5,
 * both from npm into .conformance/) against the conformance fixture served by src/http, through
 * `npm run test:conformance` (scripts/conformance.mjs --json). Each applicable server scenario
 * must pass: exit code 0 and no FAILURE check. The scenarios that do not apply are listed, with
 * why, in the README ("Conformance").
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '../..');
/** The scenarios that apply (README, "Conformance"), the same list `scripts/conformance.mjs` runs. */
const APPLICABLE = JSON.parse(readFileSync(join(import.meta.dirname, 'scenarios.json'), 'utf8')) as string[];

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}
interface Scenario {
  name: string;
  passed: boolean;
  exitCode: number | null;
  checks: Check[];
  output?: string;
}
let report: { node: string; suite: string; scenarios: Scenario[] };

beforeAll(async () => {
  const proc = spawn(process.execPath, [join(REPO, 'scripts/conformance.mjs'), '--json'], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  proc.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  await new Promise<void>((res) => proc.once('exit', () => res()));
  const line = out.trim().split('\n').pop() ?? '';
  if (!line.startsWith('{')) throw new Error(`scripts/conformance.mjs printed no report:\n${out}\n${err}`);
  report = JSON.parse(line) as typeof report;
}, 900_000);

describe('@modelcontextprotocol/conformance server scenarios against the fixture on src/http', () => {
  it('ran the pinned suite on Node 22, every applicable scenario and no other', () => {
    expect(report.node).toMatch(/^v22\./);
    expect(report.suite).toBe('0.2.0-alpha.12');
    expect(report.scenarios.map((s) => s.name)).toEqual([...APPLICABLE]);
  });

  it.each(APPLICABLE)('%s passes (no failed check)', (name) => {
    const s = report.scenarios.find((x) => x.name === name)!;
    const failed = s.checks.filter((c) => c.status === 'FAILURE');
    expect(failed, s.output).toEqual([]);
    expect(s.checks.filter((c) => c.status === 'SUCCESS').length).toBeGreaterThan(0);
    expect(s.exitCode).toBe(0);
    expect(s.passed).toBe(true);
  });

  it('tampered-state and dns-rebinding-protection are decided by mcp-confirm: the tampered state is refused, a foreign Host is refused', () => {
    const ids = (name: string): string[] => report.scenarios.find((x) => x.name === name)!.checks.filter((c) => c.status === 'SUCCESS').map((c) => c.id);
    expect(ids('input-required-result-tampered-state')).toContain('sep-2322-reject-tampered-state');
    expect(ids('dns-rebinding-protection')).toEqual(expect.arrayContaining(['localhost-host-rebinding-rejected', 'localhost-host-valid-accepted']));
  });
});
