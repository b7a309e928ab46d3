/**
 * `mcp-confirm proxy` in front of real servers, as hosts in the field drive it (issue 16, part 6):
 * the built CLI as a subprocess, real SDK clients (v2 pinned to 2026-07-28, the SDK's base stdio
 * transport, which probes `server/discover` on a throwaway proxy process first and ends it; the
 * 2025-era v1 client), `@modelcontextprotocol/server-filesystem` and fixture upstreams
 * (fixtures/stubbornUpstream.mjs, fixtures/schemaUpstream.mjs). Needs `npm run build` first.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { childOf } from '../../src/proxy/upstream.js';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS } from '../helpers/harness.js';
import { PROCESS_DEADLINE_MS } from '../helpers/deadlines.js';
import { MAIN } from '../helpers/httpServer.js';
import { resultText as text, startStdioProxy, useProxyRoot, type Closers } from '../helpers/proxyProcess.js';
import { liveProcessesMentioning, until } from '../helpers/processes.js';
import { upstreamCalls as calls } from '../helpers/upstreamCalls.js';

const FS_SERVER = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
const STUBBORN = resolve(import.meta.dirname, 'fixtures/stubbornUpstream.mjs');
const SCHEMA_UPSTREAM = resolve(import.meta.dirname, 'fixtures/schemaUpstream.mjs');
/** What a client that cannot answer the question is told, in both eras. */
const NO_ELICITATION_TEXT =
  '[ERR_CONFIRM_NO_ELICITATION] This tool needs a human confirmation, but the client did not declare the elicitation capability, so it cannot ask; nothing was done. With passkey approval, this server would instead answer with a link where a person approves the call with their passkey.';

const closers: Closers = [];
const testRoot = useProxyRoot('proxyreal', closers);

/** A fresh directory with a unique name (no name is a prefix of another: the orphan scan looks for it). */
function freshDir(kind: string): string {
  return mkdtempSync(join(testRoot(), `${kind}-`));
}

/**
 * Spawns `mcp-confirm proxy ARGS…` (the args as given: with or without `--`) and connects a v2
 * client pinned to 2026-07-28 through the SDK's base stdio transport.
 */
const proxy = (args: string[], options: { elicitation?: boolean } = {}) =>
  startStdioProxy(args, {
    name: 'proxy-real-test',
    closers,
    clientOptions:
      options.elicitation === false ? { ...MANUAL_CLIENT_OPTIONS, capabilities: {} } : MANUAL_CLIENT_OPTIONS,
  });

function ended(child: ChildProcess): Promise<void> {
  return new Promise((res) =>
    child.exitCode !== null || child.signalCode !== null ? res() : child.once('exit', () => res()),
  );
}

describe('no upstream outlives its proxy, however the proxy ends', () => {
  const ways: Array<[string, (proxyProcess: ChildProcess) => void]> = [
    ['the end of its stdin', (p) => p.stdin!.end()],
    ['SIGTERM', (p) => p.kill('SIGTERM')],
    ['SIGINT', (p) => p.kill('SIGINT')],
    ['SIGKILL (the proxy runs no code: its supervisor sees its parent change)', (p) => p.kill('SIGKILL')],
  ];

  it.each(ways)(
    "ended by %s: every upstream process (its probe sibling, the throwaway proxy's, one that ignores SIGTERM and its child) is gone",
    async (_way, end) => {
      const dir = freshDir('orphan');
      // The SDK's client first probed server/discover on a throwaway proxy and ended it (stdin end,
      // SIGTERM, SIGKILL after 1 s), which had started its own upstream: those must end too.
      const { client, transport } = await proxy(['--', process.execPath, STUBBORN, dir]);
      const pids = JSON.parse(text(await callTool(client, { name: 'pids', arguments: {} }))) as {
        upstream: number;
        child: number;
      };
      // Control: while the proxy runs, its upstream and the upstream's child are alive, and the scan sees them.
      expect(liveProcessesMentioning(dir)).toEqual(expect.arrayContaining([pids.upstream, pids.child]));
      const proxyProcess = childOf(transport)!;
      end(proxyProcess);
      await ended(proxyProcess);
      // No time budget: waits until no live (non-zombie) process with the directory on its command line is left.
      await until(() => liveProcessesMentioning(dir).length === 0);
      expect(liveProcessesMentioning(dir)).toEqual([]);
    },
  );
});

describe('the supervisor is not on the path of the messages (Linux)', () => {
  it("the upstream's stdin is the supervisor's own, the proxy's pipe: no message is relayed through the supervisor", async () => {
    const dir = freshDir('direct');
    const { client, transport } = await proxy(['--', process.execPath, STUBBORN, dir]);
    const pids = JSON.parse(text(await callTool(client, { name: 'pids', arguments: {} }))) as { upstream: number };
    const proxyPid = childOf(transport)!.pid!;
    // The upstream's parent is the proxy's supervisor, the proxy's child.
    const supervisor = statField(pids.upstream, 4);
    expect(statField(supervisor, 4)).toBe(proxyPid);
    expect(readFileSync(`/proc/${supervisor}/cmdline`, 'utf8').split('\0')).toContain(`--parent=${proxyPid}`);
    // Node's 'pipe' stdio is a socket pair: the end the proxy writes to.
    const upstreamIn = readlinkSync(`/proc/${pids.upstream}/fd/0`);
    expect(upstreamIn).toMatch(/^(pipe|socket):\[[0-9]+\]$/);
    expect(readlinkSync(`/proc/${supervisor}/fd/0`)).toBe(upstreamIn);
  });
});

/** Field `index` (1-based, as in proc(5): 5 is the process group, 6 the session) of /proc/PID/stat. */
function statField(pid: number, index: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[index - 3]);
}

/** The live processes mentioning `dir` one of whose arguments is exactly `arg`. */
function liveWith(dir: string, arg: string): number[] {
  return liveProcessesMentioning(dir).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(arg);
    } catch {
      return false;
    }
  });
}

/** The background job (`node -e KEEP DIR`) in the session of the upstream `upstream`, once it runs. */
async function jobOf(dir: string, keep: string, upstream: number): Promise<number> {
  const session = statField(upstream, 6);
  let job: number | undefined;
  await until(() => {
    // The SDK client's throwaway probe proxy started its own upstream and job: not that one.
    job = liveWith(dir, keep).find((pid) => {
      try {
        return statField(pid, 6) === session;
      } catch {
        return false;
      }
    });
    return job !== undefined;
  });
  return job!;
}

describe('an upstream whose shell makes process groups of its own (job control) in its session', () => {
  // bash -c 'set -m; node -e KEEP DIR & exec node stubbornUpstream.mjs DIR': the background job gets a
  // process group of its own (set -m), in the upstream's session.
  const KEEP = 'setInterval(() => {}, 1e6)';
  const jobControl = (dir: string, monitor: boolean) => [
    '--',
    'bash',
    '-c',
    `${monitor ? 'set -m; ' : ''}"$0" -e '${KEEP}' "$1" 2>/dev/null & exec "$0" "$2" "$1"`,
    process.execPath,
    dir,
    STUBBORN,
  ];

  const cases: Array<[string, (proxyProcess: ChildProcess, dir: string) => void]> = [
    ['the proxy SIGKILLed (the supervisor ends the group and the session)', (p) => p.kill('SIGKILL')],
    [
      'the supervisor SIGKILLed, then the proxy (the reaper ends them)',
      (p, dir) => {
        // The proxy's own supervisor (the probe's has ended or is ending on its own).
        const supervisor = liveProcessesMentioning(dir).find((pid) => {
          try {
            return (
              statField(pid, 4) === p.pid && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('supervisor.js')
            );
          } catch {
            return false;
          }
        });
        process.kill(supervisor!, 'SIGKILL');
        p.kill('SIGKILL');
      },
    ],
  ];

  it.each(cases)('%s: the job in another process group is gone too', async (_case, end) => {
    const dir = freshDir('jobs');
    const { client, transport } = await proxy(jobControl(dir, true));
    const pids = JSON.parse(text(await callTool(client, { name: 'pids', arguments: {} }))) as {
      upstream: number;
      child: number;
    };
    // The scan sees the background job (in the upstream's session, its command line the keep-alive and the directory).
    const job = await jobOf(dir, KEEP, pids.upstream);
    // Control: it is the case meant: the job's group is not the upstream's.
    expect(statField(job, 5)).not.toBe(statField(pids.upstream, 5));
    expect(liveProcessesMentioning(dir)).toEqual(expect.arrayContaining([pids.upstream, pids.child, job]));
    const proxyProcess = childOf(transport)!;
    end(proxyProcess, dir);
    await ended(proxyProcess);
    // No time budget: waits until no live (non-zombie) process with the directory on its command line is left.
    await until(() => liveProcessesMentioning(dir).length === 0);
    expect(liveProcessesMentioning(dir)).toEqual([]);
  });

  it("control: without set -m the job stays in the upstream's group, and the proxy SIGKILLed ends it as before", async () => {
    const dir = freshDir('nojobs');
    const { client, transport } = await proxy(jobControl(dir, false));
    const pids = JSON.parse(text(await callTool(client, { name: 'pids', arguments: {} }))) as {
      upstream: number;
      child: number;
    };
    const job = await jobOf(dir, KEEP, pids.upstream);
    expect(statField(job, 5)).toBe(statField(pids.upstream, 5));
    const proxyProcess = childOf(transport)!;
    proxyProcess.kill('SIGKILL');
    await ended(proxyProcess);
    await until(() => liveProcessesMentioning(dir).length === 0);
    expect(liveProcessesMentioning(dir)).toEqual([]);
  });
});

describe('a result larger than the SDK reads as one stdio message (10 MiB)', () => {
  it('server-filesystem reading a 6 MB file: the call names the size limit (not "exited with code 0"), stderr too, and later calls are refused naming it; head: 10 of the same file passes (control)', async () => {
    const root = freshDir('large');
    const line = `${'x'.repeat(99)}\n`;
    writeFileSync(join(root, 'big.txt'), line.repeat(60_000)); // 6,000,000 bytes, as text and structuredContent: over 12 MB of JSON
    writeFileSync(join(root, 'small.txt'), 'small\n');
    const { client, stderr } = await proxy([process.execPath, FS_SERVER, root]);
    // Control: a part of the same file (the way to avoid it), and a small file, answer normally.
    expect(
      text(await callTool(client, { name: 'read_text_file', arguments: { path: join(root, 'big.txt'), head: 10 } })),
    ).toBe(line.repeat(10).trimEnd());
    expect(text(await callTool(client, { name: 'read_text_file', arguments: { path: join(root, 'small.txt') } }))).toBe(
      'small\n',
    );
    const reason =
      'its answer was larger than 10485760 bytes (10 MiB), the most the MCP SDK reads as one message over stdio, so the SDK ended the connection to it';
    // The SDK's default request timeout (60 s) only bounds a hang; moving 12 MB through two processes
    // on a busy machine can take longer, and this asserts what the answer says, not when it comes.
    const whole = await callTool(
      client,
      { name: 'read_text_file', arguments: { path: join(root, 'big.txt') } },
      { timeoutMs: 2 * PROCESS_DEADLINE_MS },
    );
    expect(whole).toMatchObject({ kind: 'result', isError: true });
    expect(text(whole)).toBe(
      `[ERR_CONFIRM_UPSTREAM_FAILED] The upstream server failed during the call (${reason}); whether it acted is unknown, and the call was not retried.`,
    );
    await until(() => stderr().includes(`the upstream server is down (${reason})`));
    expect(stderr()).toContain(`mcp-confirm proxy: upstream: ${reason}`);
    expect(stderr()).not.toContain('exited with code 0');
    const after = await callTool(client, { name: 'read_text_file', arguments: { path: join(root, 'small.txt') } });
    expect(text(after)).toBe(
      `[ERR_CONFIRM_UPSTREAM_DOWN] The upstream server is down (${reason}); nothing was forwarded. The proxy does not restart it: restart the proxy.`,
    );
  });
});

describe('the upstream command without -- (hosts that drop it, such as the Inspector CLI)', () => {
  it('proxy --ttl 60 node server-filesystem ROOT: write_file is asked, confirmed and written once', async () => {
    const root = freshDir('nodash');
    const { client } = await proxy(['--ttl', '60', process.execPath, FS_SERVER, root]);
    const args = { path: join(root, 'a.txt'), content: 'no dash' };
    const { state, message } = asked(await callTool(client, { name: 'write_file', arguments: args }));
    expect(message).toContain('Run the tool `write_file` of the upstream server `secure-filesystem-server`');
    expect(
      await callTool(client, { name: 'write_file', arguments: args, inputResponses: ACCEPT, requestState: state }),
    ).toMatchObject({ kind: 'result', isError: false });
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('no dash');
  });

  it('words after the command that look like proxy options go to the upstream (--confirm-unnamed there does not make the proxy ask); with -- the same (control)', async () => {
    const dir = freshDir('argv');
    const without = await proxy([process.execPath, SCHEMA_UPSTREAM, dir, '--confirm-unnamed', '--ttl', '5']);
    expect(JSON.parse(text(await callTool(without.client, { name: 'argv', arguments: {} })))).toEqual([
      dir,
      '--confirm-unnamed',
      '--ttl',
      '5',
    ]);
    const withDash = await proxy(['--', process.execPath, SCHEMA_UPSTREAM, dir, '--confirm-unnamed', '--ttl', '5']);
    expect(JSON.parse(text(await callTool(withDash.client, { name: 'argv', arguments: {} })))).toEqual([
      dir,
      '--confirm-unnamed',
      '--ttl',
      '5',
    ]);
    // Control: given before the command, --confirm-unnamed is the proxy's: the read-only argv tool is asked.
    const own = await proxy(['--confirm-unnamed', process.execPath, SCHEMA_UPSTREAM, dir]);
    asked(await callTool(own.client, { name: 'argv', arguments: {} }));
  });

  it('a proxy option name after a command given without -- gets one note on stderr per name, saying it goes to the upstream; with an explicit -- (control), or before the command, none', async () => {
    const dir = freshDir('notes');
    const note = (name: string) =>
      `mcp-confirm proxy: note: ${name} after the upstream command is passed to the upstream, not read by the proxy; give it before the command\n`;
    /** Everything the proxy wrote on stderr, once it has exited (its stderr ended). */
    const allStderr = async (p: Awaited<ReturnType<typeof proxy>>): Promise<string> => {
      const ended = new Promise<void>((res) => p.transport.stderr!.once('end', () => res()));
      await p.client.close();
      await ended;
      return p.stderr();
    };
    const without = await proxy([
      process.execPath,
      SCHEMA_UPSTREAM,
      dir,
      '--policy',
      'deny.json',
      '--ttl',
      '5',
      '--policy',
      'again.json',
      '--help',
    ]);
    expect(JSON.parse(text(await callTool(without.client, { name: 'argv', arguments: {} })))).toEqual([
      dir,
      '--policy',
      'deny.json',
      '--ttl',
      '5',
      '--policy',
      'again.json',
      '--help',
    ]);
    const said = await allStderr(without);
    expect(said.split(note('--policy')).length - 1).toBe(1);
    expect(said.split(note('--ttl')).length - 1).toBe(1);
    expect(said).not.toContain('note: --help');
    expect(said.indexOf(note('--policy'))).toBeLessThan(said.indexOf(note('--ttl')));
    const withDash = await proxy(['--', process.execPath, SCHEMA_UPSTREAM, dir, '--policy', 'deny.json']);
    expect(JSON.parse(text(await callTool(withDash.client, { name: 'argv', arguments: {} })))).toEqual([
      dir,
      '--policy',
      'deny.json',
    ]);
    expect(await allStderr(withDash)).not.toContain('note:');
    const before = await proxy(['--ttl', '60', process.execPath, SCHEMA_UPSTREAM, dir, '--ttl-x']);
    expect(JSON.parse(text(await callTool(before.client, { name: 'argv', arguments: {} })))).toEqual([dir, '--ttl-x']);
    expect(await allStderr(before)).not.toContain('note:');
  });
});

describe("arguments the upstream's inputSchema refuses are refused before the human is asked", () => {
  const refusal = (problem: string) =>
    `[ERR_CONFIRM_BAD_ARGUMENT] Bad argument: the arguments do not match the tool's inputSchema: \`${problem}\`; nothing was asked and nothing was done.`;

  it('server-filesystem write_file without content, or with a number: refused naming the first problem, nothing asked or written; with a string content asked and written (control)', async () => {
    const root = freshDir('schemafs');
    const { client, stderr } = await proxy([process.execPath, FS_SERVER, root]);
    const path = join(root, 'n.txt');
    expect(text(await callTool(client, { name: 'write_file', arguments: { path } }))).toBe(
      refusal("arguments must have required property 'content'"),
    );
    expect(text(await callTool(client, { name: 'write_file', arguments: { path, content: 5 } }))).toBe(
      refusal('arguments/content must be string'),
    );
    expect(stderr()).not.toContain('asked to confirm');
    expect(existsSync(path)).toBe(false);
    const { state } = asked(await callTool(client, { name: 'write_file', arguments: { path, content: 'ok' } }));
    await callTool(client, {
      name: 'write_file',
      arguments: { path, content: 'ok' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(readFileSync(path, 'utf8')).toBe('ok');
  });

  it('integer, maxLength, required and additionalProperties are checked; a matching call is asked and forwarded exactly (control)', async () => {
    const dir = freshDir('typed');
    const { client } = await proxy([process.execPath, SCHEMA_UPSTREAM, dir]);
    expect(text(await callTool(client, { name: 'typed', arguments: { name: 'abc', count: 1.5 } }))).toBe(
      refusal('arguments/count must be integer'),
    );
    expect(text(await callTool(client, { name: 'typed', arguments: { name: 'abcdef' } }))).toBe(
      refusal('arguments/name must NOT have more than 5 characters'),
    );
    expect(text(await callTool(client, { name: 'typed', arguments: {} }))).toBe(
      refusal("arguments must have required property 'name'"),
    );
    expect(text(await callTool(client, { name: 'typed', arguments: { name: 'abc', extra: true } }))).toBe(
      refusal('arguments must NOT have additional properties'),
    );
    expect(calls(dir)).toEqual([]);
    const args = { name: 'abc', count: 2 };
    const { state } = asked(await callTool(client, { name: 'typed', arguments: args }));
    await callTool(client, { name: 'typed', arguments: args, inputResponses: ACCEPT, requestState: state });
    expect(calls(dir)).toEqual([JSON.stringify(args)]);
  });

  it('no coercion and no defaults: "5" for a number is refused; {} is forwarded as {} (the schema\'s default not filled in)', async () => {
    const dir = freshDir('defaulted');
    const { client } = await proxy([process.execPath, SCHEMA_UPSTREAM, dir]);
    expect(text(await callTool(client, { name: 'defaulted', arguments: { n: '5' } }))).toBe(
      refusal('arguments/n must be number'),
    );
    const { state } = asked(await callTool(client, { name: 'defaulted', arguments: {} }));
    await callTool(client, { name: 'defaulted', arguments: {}, inputResponses: ACCEPT, requestState: state });
    expect(calls(dir)).toEqual(['{}']);
  });

  it("pattern and patternProperties are not run (a backtracking ^(a+)+$ on 60 a's and a b would stall the proxy): asked and forwarded; maxLength next to the pattern is still checked (control)", async () => {
    const dir = freshDir('patterned');
    const { client } = await proxy([process.execPath, SCHEMA_UPSTREAM, dir]);
    const evil = `${'a'.repeat(60)}b`;
    const args = { word: evil, [`x-${evil}`]: 'v' };
    const { state } = asked(await callTool(client, { name: 'patterned', arguments: args }));
    await callTool(client, { name: 'patterned', arguments: args, inputResponses: ACCEPT, requestState: state });
    expect(calls(dir)).toEqual([JSON.stringify(args)]);
    expect(text(await callTool(client, { name: 'patterned', arguments: { word: 'a'.repeat(101) } }))).toBe(
      refusal('arguments/word must NOT have more than 100 characters'),
    );
  });

  it("a backtracking pattern reached through a $ref into an unknown keyword is not run: 40 a's and a ! (hours if it ran) is asked at once and a tools/list sent next is answered; a maxLength reached through the same $ref is still checked (control)", async () => {
    const dir = freshDir('refpattern');
    const { client } = await proxy([process.execPath, SCHEMA_UPSTREAM, dir]);
    const args = { w: `${'a'.repeat(40)}!` };
    const call = callTool(client, { name: 'refPattern', arguments: args });
    const listed = client.listTools();
    const { state } = asked(await call);
    expect((await listed).tools.map((t) => t.name)).toContain('refPattern');
    await callTool(client, { name: 'refPattern', arguments: args, inputResponses: ACCEPT, requestState: state });
    expect(calls(dir)).toEqual([JSON.stringify(args)]);
    expect(text(await callTool(client, { name: 'refPattern', arguments: { w: 'a'.repeat(51) } }))).toBe(
      refusal('arguments/w must NOT have more than 50 characters'),
    );
  });

  it('uniqueItems is not checked (quadratic in the items): 20,000 objects, two of them equal, are asked, not refused; a maxItems beside it is still checked (control)', async () => {
    const dir = freshDir('unique');
    const { client } = await proxy([process.execPath, SCHEMA_UPSTREAM, dir]);
    const list = Array.from({ length: 20000 }, (_, i) => ({ a: i === 19999 ? 0 : i }));
    asked(await callTool(client, { name: 'unique', arguments: { list } }));
    expect(text(await callTool(client, { name: 'unique', arguments: { list: [...list, { a: 20000 }] } }))).toBe(
      refusal('arguments/list must NOT have more than 20000 items'),
    );
    expect(calls(dir)).toEqual([]);
  });

  it('a format name holding a newline, ESC and CR reaches the proxy\'s stderr rendered (ajv\'s "unknown format" warning), never raw; the call is asked and forwarded (control)', async () => {
    const dir = freshDir('oddformat');
    const { client, stderr } = await proxy([process.execPath, SCHEMA_UPSTREAM, dir]);
    const { state } = asked(await callTool(client, { name: 'oddFormat', arguments: { v: 'x' } }));
    await callTool(client, { name: 'oddFormat', arguments: { v: 'x' }, inputResponses: ACCEPT, requestState: state });
    expect(calls(dir)).toEqual([JSON.stringify({ v: 'x' })]);
    expect(stderr()).toContain(
      'mcp-confirm proxy: argument check: the validator said `unknown format "x\\n\\x1b[2K\\rFORGED LOG LINE" ignored in schema at path "#/properties/v"`\n',
    );
    expect(stderr()).not.toMatch(/[\u001b\r]/);
    expect(
      stderr()
        .split('\n')
        .filter((line) => line.startsWith('FORGED')),
    ).toEqual([]);
  });

  it('a check that fails while it runs is refused as not checkable, nothing asked or forwarded: a schema referring to itself without end, and arguments nested 3,000 deep against a recursive schema; 100 deep is asked and a wrong type deep inside is named (controls)', async () => {
    const dir = freshDir('recursive');
    const { client, stderr } = await proxy([process.execPath, SCHEMA_UPSTREAM, dir]);
    const uncheckable =
      "[ERR_CONFIRM_BAD_ARGUMENT] Bad argument: the arguments could not be checked against the tool's inputSchema (the check ran out of stack: the arguments are nested too deeply, or the schema refers to itself without end); nothing was asked and nothing was done.";
    expect(text(await callTool(client, { name: 'selfRef', arguments: {} }))).toBe(uncheckable);
    const nested = (depth: number, leaf: Record<string, unknown>) => {
      let v: Record<string, unknown> = leaf;
      for (let i = 0; i < depth; i++) v = { c: v };
      return v;
    };
    expect(text(await callTool(client, { name: 'tree', arguments: nested(3000, { n: 1 }) }))).toBe(uncheckable);
    expect(text(await callTool(client, { name: 'tree', arguments: nested(3, { n: 'one' }) }))).toBe(
      refusal('arguments/c/c/c/n must be integer'),
    );
    expect(stderr()).not.toContain('asked to confirm');
    expect(calls(dir)).toEqual([]);
    const args = nested(100, { n: 1 });
    const { state } = asked(await callTool(client, { name: 'tree', arguments: args }));
    await callTool(client, { name: 'tree', arguments: args, inputResponses: ACCEPT, requestState: state });
    expect(calls(dir)).toEqual([JSON.stringify(args)]);
  });

  it('a schema the validator cannot compile is not checked: the call is asked and forwarded as before', async () => {
    const dir = freshDir('uncompilable');
    const { client } = await proxy([process.execPath, SCHEMA_UPSTREAM, dir]);
    const { state } = asked(await callTool(client, { name: 'uncompilable', arguments: { n: 1 } }));
    await callTool(client, { name: 'uncompilable', arguments: { n: 1 }, inputResponses: ACCEPT, requestState: state });
    expect(calls(dir)).toEqual([JSON.stringify({ n: 1 })]);
  });
});

describe('a client without elicitation, through the proxy', () => {
  it("a 2026-07-28 client: JSON-RPC -32021 with data.requiredCapabilities and this project's sentence; nothing written", async () => {
    const root = freshDir('noelicit');
    const { client } = await proxy([process.execPath, FS_SERVER, root], { elicitation: false });
    const path = join(root, 'x.txt');
    expect(await callTool(client, { name: 'write_file', arguments: { path, content: 'x' } })).toEqual({
      kind: 'error',
      code: -32021,
      message: NO_ELICITATION_TEXT,
      data: { requiredCapabilities: { elicitation: { form: {} } } },
    });
    expect(existsSync(path)).toBe(false);
    // Control: a read-only tool needs no question and passes.
    writeFileSync(join(root, 'r.txt'), 'read');
    expect(text(await callTool(client, { name: 'read_text_file', arguments: { path: join(root, 'r.txt') } }))).toBe(
      'read',
    );
  });

  it('control: a 2025-era v1 client without elicitation gets the same sentence as an isError result', async () => {
    const root = freshDir('noelicitv1');
    const client = new V1Client({ name: 'legacy', version: '0.0.0' }, { capabilities: {} });
    await client.connect(
      new V1StdioClientTransport({
        command: process.execPath,
        args: [MAIN, 'proxy', process.execPath, FS_SERVER, root],
        stderr: 'pipe',
      }),
    );
    closers.push(() => client.close());
    const path = join(root, 'x.txt');
    const r = (await client.callTool({ name: 'write_file', arguments: { path, content: 'x' } })) as {
      content: Array<{ text?: string }>;
      isError?: boolean;
    };
    expect(r).toMatchObject({ isError: true, content: [{ text: NO_ELICITATION_TEXT }] });
    expect(existsSync(path)).toBe(false);
  });
});
