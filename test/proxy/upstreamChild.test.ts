/**
 * The proxy reads the upstream's exit code and signal from the SDK's StdioClientTransport's
 * private `_process` (see `childOf` in src/proxy/upstream.ts). This fails loudly when an SDK
 * upgrade removes or renames it, so the down reason never silently degrades.
 */
import { ChildProcess } from 'node:child_process';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { describe, expect, it } from 'vitest';
import { childOf } from '../../src/proxy/upstream.js';

describe('childOf(StdioClientTransport)', () => {
  it('finds the spawned child (same pid as the public pid) and its exit signal, SDK 2.4.0 private _process', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['-e', 'process.stdin.resume()'],
      stderr: 'ignore',
    });
    await transport.start();
    const child = childOf(transport);
    expect(
      child,
      'StdioClientTransport no longer keeps its child in _process: update childOf (src/proxy/upstream.ts)',
    ).toBeInstanceOf(ChildProcess);
    expect(child?.pid).toBe(transport.pid);
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child?.once('exit', (_code, signal) => resolve(signal)),
    );
    child?.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    await transport.close();
  });

  it('control: a transport not started has no child', () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: ['-e', ''] });
    expect(childOf(transport)).toBeUndefined();
  });
});
