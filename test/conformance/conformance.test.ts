/**
 * The MCP conformance suite (@modelcontextprotocol/conformance 0.2.0-alpha.12 on Node 22.23.5,
 * both from npm into .conformance/) through `npm run test:conformance` (scripts/conformance.mjs
 * --json), against two targets named per scenario in scenarios.json: `cli`, the real built
 * `mcp-confirm --root <temp dir> --http 127.0.0.1:0`, and `fixture`, the test_* tools of
 * fixtureServer.ts served by the same src/http code, for the scenarios that call those tools.
 * Each listed scenario must pass against its target: exit code 0 and no FAILURE check. The
 * scenarios that do not apply are listed, with why, in docs/conformance.md.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '../..');
type Target = 'cli' | 'fixture';
/** Which target runs which scenario (docs/conformance.md): the same file `scripts/conformance.mjs` reads. */
const LIST = JSON.parse(readFileSync(join(import.meta.dirname, 'scenarios.json'), 'utf8')) as Record<Target, string[]>;
const RUNS: Array<[Target, string]> = [
  ...LIST.cli.map((n): [Target, string] => ['cli', n]),
  ...LIST.fixture.map((n): [Target, string] => ['fixture', n]),
];

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}
interface Scenario {
  target: Target;
  name: string;
  passed: boolean;
  exitCode: number | null;
  checks: Check[];
  output?: string;
}
interface Server {
  command: string[];
  url: string;
  exit: { code: number | null; signal: string | null; killed: boolean };
  stderr?: string;
}
let report: { node: string; suite: string; targets: Record<Target, Server>; scenarios: Scenario[] };

beforeAll(async () => {
  const proc = spawn(process.execPath, [join(REPO, 'scripts/conformance.mjs'), '--json'], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  proc.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  await new Promise<void>((res) => proc.once('exit', () => res()));
  const line = out.trim().split('\n').pop() ?? '';
  if (!line.startsWith('{')) throw new Error(`scripts/conformance.mjs printed no report:\n${out}\n${err}`);
  report = JSON.parse(line) as typeof report;
}, 900_000);

const scenario = (target: Target, name: string): Scenario =>
  report.scenarios.find((x) => x.target === target && x.name === name)!;
const succeeded = (target: Target, name: string): string[] =>
  scenario(target, name)
    .checks.filter((c) => c.status === 'SUCCESS')
    .map((c) => c.id);

describe('@modelcontextprotocol/conformance server scenarios against mcp-confirm --http and the fixture on src/http', () => {
  it('ran the pinned suite on Node 22, every listed scenario against its target and no other', () => {
    expect(report.node).toMatch(/^v22\./);
    expect(report.suite).toBe('0.2.0-alpha.12');
    expect(report.scenarios.map((s) => [s.target, s.name])).toEqual(RUNS);
  });

  it('the cli target is the built mcp-confirm serving --http on a loopback port of a temp root, with no auth flags', () => {
    const args = report.targets.cli.command.slice(1);
    expect(args[0]).toBe(join(REPO, 'dist', 'cli', 'main.js'));
    expect(args).toEqual(expect.arrayContaining(['--root', '--http', '127.0.0.1:0']));
    expect(args.some((a) => a.startsWith('--auth'))).toBe(false);
    expect(report.targets.cli.url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9][0-9]*\/mcp$/);
    expect(report.targets.fixture.command.slice(1)).toContain(join(REPO, 'test/conformance/fixtureServer.ts'));
  });

  it('both servers were stopped at the end by SIGTERM, each exiting 0 (no SIGKILL needed)', () => {
    for (const t of ['cli', 'fixture'] as const)
      expect(report.targets[t].exit, t).toEqual({ code: 0, signal: null, killed: false });
  });

  it.each(RUNS)('against %s: %s passes (no failed check)', (target, name) => {
    const s = scenario(target, name);
    const failed = s.checks.filter((c) => c.status === 'FAILURE');
    expect(failed, `${s.output ?? ''}\n${report.targets[target].stderr ?? ''}`).toEqual([]);
    expect(s.checks.filter((c) => c.status === 'SUCCESS').length).toBeGreaterThan(0);
    expect(s.exitCode).toBe(0);
    expect(s.passed).toBe(true);
  });

  it('tampered-state and dns-rebinding-protection are decided by mcp-confirm: the tampered state is refused (fixture), a foreign Host is refused by the real mcp-confirm --http', () => {
    expect(succeeded('fixture', 'input-required-result-tampered-state')).toContain('sep-2322-reject-tampered-state');
    expect(succeeded('cli', 'dns-rebinding-protection')).toEqual(
      expect.arrayContaining(['localhost-host-rebinding-rejected', 'localhost-host-valid-accepted']),
    );
  });
});
