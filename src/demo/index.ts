/**
 * `mcp-confirm/demo`: the demo server with its one confirmed tool, `delete_file`, as the command
 * line serves it (`mcp-confirm --root DIR`). The contract is in docs/cli.md, "The tool `delete_file`".
 * Not part of the root entry: a library user builds their own tools with `createConfirmation`.
 *
 * @example
 * ```ts
 * import { serveStdio } from '@modelcontextprotocol/server/stdio';
 * import { createDemoServer } from 'mcp-confirm/demo';
 *
 * const { factory } = await createDemoServer({ roots: ['/srv/scratch'] });
 * serveStdio(factory);
 * ```
 *
 * @module mcp-confirm/demo
 */

// The server: build it once, hand its factory to `serveStdio` or `createMcpHandler`.
export { createDemoServer, type DemoServerOptions } from './deleteFile.js';

// The tool, for a server of your own built with `confirmation.serverOptions`.
export { registerDeleteFile, deleteFileQuestion } from './deleteFile.js';

// What the demo announces: the server's name and version, the tool's input schema.
export { SERVER_INFO, DeleteFileInput } from './deleteFileSpec.js';
