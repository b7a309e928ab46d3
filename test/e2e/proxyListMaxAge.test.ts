/**
 * `--list-max-age` (the proxy's `listMaxAgeSeconds`): for an upstream that does not announce
 * tool-list changes (fixtures/flipUpstream.mjs, SDK v1, 2025 era, `tools: {}` like
 * server-filesystem), the decision for a tool the policy does not name may come from a list read up
 * to that long ago. The proxy runs in this process (createProxy over serveStdio's in-memory
 * transport) with an injected clock, in front of the fixture spawned for real, and a real v2
 * client pinned to 2026-07-28 drives the rounds by hand: time is the test's, never slept on.
 * The CLI flag is checked through the built CLI as a subprocess. Needs `npm run build` first.
 */
import { mkdirSync, readFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACCEPT, asked, connect, type Reply } from '../helpers/harness.js';
import { resultText, runProxy, startStdioProxy, useProxyRoot, type Closers } from '../helpers/proxyProcess.js';
import { upstreamCalls as calls } from '../helpers/upstreamCalls.js';
import { TOOL_CHANGED_NOTICE } from '../../src/proxy/question.js';
// The built modules (the upstream runs under dist/proxy/supervisor.js, next to dist/proxy/upstream.js).
import { createConfirmation } from '../../dist/guard/confirmation.js';
import { createProxy } from '../../dist/proxy/server.js';
import { Upstream } from '../../dist/proxy/upstream.js';

const FLIP = resolve(import.meta.dirname, 'fixtures/flipUpstream.mjs');
const closers: Closers = [];
const testRoot = useProxyRoot('listage', closers);

let dirs = 0;
function freshDir(): string {
  const dir = join(testRoot(), `d${++dirs}`);
  mkdirSync(dir);
  return dir;
}

/** How many tools/list requests the fixture answered (the proxy's start-up listing included). */
function listings(dir: string): number {
  const file = join(dir, 'lists.log');
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l !== '').length
    : 0;
}

/** The proxy in this process in front of the fixture, its clock at `clock.ms`, with a v2 client pinned to 2026-07-28. */
async function agedProxy(dir: string, listMaxAgeSeconds: number | undefined) {
  const clock = { ms: 1_000_000 };
  const confirmation = await createConfirmation({ audience: 'mcp-confirm-proxy', now: () => clock.ms });
  const upstream = await Upstream.spawn({ command: [process.execPath, FLIP, dir] });
  closers.push(() => upstream.close());
  const proxy = createProxy({
    confirmation,
    upstream,
    now: () => clock.ms,
    ...(listMaxAgeSeconds === undefined ? {} : { listMaxAgeSeconds }),
  });
  const connected = await connect(proxy.factory);
  closers.push(() => connected.close());
  const call = (text: string, extra?: { inputResponses?: unknown; requestState?: unknown }): Promise<Reply> =>
    connected.call('note', { text }, extra);
  const flip = async (destructive: boolean) =>
    expect(resultText(await connected.call('flip', { destructive }))).toBe(destructive ? 'destructive' : 'read-only');
  return { clock, call, flip, client: connected };
}

describe('listMaxAgeSeconds: a list read within the age decides calls of tools the policy does not name', () => {
  it('a tool flipped from readOnlyHint to destructive within the age passes unasked (the documented risk), and is asked once the age has passed', async () => {
    const dir = freshDir();
    const proxy = await agedProxy(dir, 60);
    // Read-only: passed, and the list read for the decision is kept (its age counts from now).
    expect(resultText(await proxy.call('one'))).toBe('noted one');
    const afterFirst = listings(dir);
    await proxy.flip(true);
    // Within the age (one millisecond short of it): decided from the list read before the flip, passed unasked.
    proxy.clock.ms += 60_000 - 1;
    expect(resultText(await proxy.call('two'))).toBe('noted two');
    expect(calls(dir)).toEqual(['one', 'two']);
    // Nothing was listed for these calls: the kept list decided them.
    expect(listings(dir)).toBe(afterFirst);
    // The age has passed: the list is read again, the tool is now destructive, so the call is asked; nothing forwarded.
    proxy.clock.ms += 1;
    const question = asked(await proxy.call('three'));
    expect(question.message).toContain('Run the tool `note`');
    expect(calls(dir)).toEqual(['one', 'two']);
    expect(listings(dir)).toBeGreaterThan(afterFirst);
  });

  it('control, the default (no age): the same flip is asked at once', async () => {
    const dir = freshDir();
    const proxy = await agedProxy(dir, undefined);
    expect(resultText(await proxy.call('one'))).toBe('noted one');
    await proxy.flip(true);
    asked(await proxy.call('two'));
    expect(calls(dir)).toEqual(['one']);
  });

  it('a clock that went back is no age: the list is read again, and the flip is asked', async () => {
    const dir = freshDir();
    const proxy = await agedProxy(dir, 60);
    expect(resultText(await proxy.call('one'))).toBe('noted one');
    await proxy.flip(true);
    proxy.clock.ms -= 1;
    asked(await proxy.call('two'));
    expect(calls(dir)).toEqual(['one']);
  });

  it('round 2 of a confirmed call whose definition changed within the age is not forwarded: asked again, the question saying the tool changed; control: unchanged, it is forwarded once', async () => {
    const dir = freshDir();
    const proxy = await agedProxy(dir, 60);
    await proxy.flip(true);
    // The list read to decide the flip (note read-only) ages out: note is decided from a list read now.
    proxy.clock.ms += 60_000;
    const first = asked(await proxy.call('changed'));
    // Within the age, the upstream rewords the tool (still destructive).
    proxy.clock.ms += 1_000;
    expect(resultText(await proxy.client.call('reword', {}))).toBe('wording 2');
    const before = listings(dir);
    const again = asked(await proxy.call('changed', { inputResponses: ACCEPT, requestState: first.state }));
    expect(again.message.split('\n')[0]).toBe(TOOL_CHANGED_NOTICE);
    expect(calls(dir)).toEqual([]);
    // Round 2 listed the upstream's tools afresh, whatever the age.
    expect(listings(dir)).toBeGreaterThan(before);
    // Control: the question asked again, answered with nothing changed since: forwarded once.
    const done = await proxy.call('changed', { inputResponses: ACCEPT, requestState: again.state });
    expect(resultText(done)).toBe('noted changed');
    expect(calls(dir)).toEqual(['changed']);
  });

  it('a confirmed call lists afresh in round 1 and round 2 within the age (two listings for the two rounds)', async () => {
    const dir = freshDir();
    const proxy = await agedProxy(dir, 60);
    await proxy.flip(true);
    // The list read to decide the flip ages out; the one read for this decision (note destructive) is kept.
    proxy.clock.ms += 60_000;
    asked(await proxy.call('warm'));
    const before = listings(dir);
    const first = asked(await proxy.call('x'));
    expect(listings(dir)).toBe(before + 1);
    const done = await proxy.call('x', { inputResponses: ACCEPT, requestState: first.state });
    expect(resultText(done)).toBe('noted x');
    expect(listings(dir)).toBe(before + 2);
  });

  it.each([[-1], [1.5], [3601], [Number.NaN]])(
    'createProxy refuses listMaxAgeSeconds %s with a RangeError',
    async (bad) => {
      const dir = freshDir();
      const confirmation = await createConfirmation({ audience: 'mcp-confirm-proxy' });
      const upstream = await Upstream.spawn({ command: [process.execPath, FLIP, dir] });
      closers.push(() => upstream.close());
      expect(() => createProxy({ confirmation, upstream, listMaxAgeSeconds: bad })).toThrow(
        new RangeError('listMaxAgeSeconds must be a whole number of seconds from 0 to 3600'),
      );
    },
  );
});

describe('mcp-confirm proxy --list-max-age (the built CLI)', () => {
  it('--list-max-age 3600: the serving line says the risk, and a tool flipped to destructive within it passes unasked', async () => {
    const dir = freshDir();
    const proxy = await startStdioProxy(['--list-max-age', '3600', '--', process.execPath, FLIP, dir], {
      name: 'list-age-cli',
      closers,
    });
    expect(resultText(await proxy.call('note', { text: 'one' }))).toBe('noted one');
    expect(resultText(await proxy.call('flip', { destructive: true }))).toBe('destructive');
    expect(resultText(await proxy.call('note', { text: 'two' }))).toBe('noted two');
    expect(calls(dir)).toEqual(['one', 'two']);
    expect(proxy.stderr()).toContain(
      'tool list kept up to 3600s (--list-max-age: a tool flipped to destructive within it passes unasked)',
    );
  });

  it.each([
    ['-1', '--list-max-age=-1'],
    ['1.5', '--list-max-age'],
    ['3601', '--list-max-age'],
    ['', '--list-max-age'],
    ['ten', '--list-max-age'],
  ])('a value of %j is refused at start-up with exit 2, naming the flag', async (value, flag) => {
    const dir = freshDir();
    const args = flag.includes('=') ? [flag] : [flag, value];
    const bad = await runProxy([...args, '--', process.execPath, FLIP, dir]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain(
      `--list-max-age must be a whole number of seconds from 0 to 3600 (one hour), got ${JSON.stringify(value)}`,
    );
    expect(listings(dir)).toBe(0);
  });
});
