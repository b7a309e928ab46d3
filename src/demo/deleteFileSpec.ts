/**
 * What `delete_file` announces, apart from what it does: the server's name and version, the input
 * schema and the tool's registration (title, description, annotations). Imports only zod, so the
 * command line can list the tool with its full schema before the confirmation layer is loaded
 * (`src/cli/lazyServer.ts`); `deleteFile.ts` registers the same object, so the two cannot differ.
 *
 * @module
 */
import { z } from 'zod';
import { PACKAGE_VERSION } from '../defaults.js';

/** The name and version the demo server announces. */
export const SERVER_INFO = { name: 'mcp-confirm', version: PACKAGE_VERSION } as const;

/**
 * The input of `delete_file`: exactly `{ path: string }`. Strict (unknown keys
 * are refused) and without transforms or defaults, so the parsed arguments the
 * digest covers equal the arguments on the wire.
 */
export const DeleteFileInput = z.strictObject({
  path: z.string().describe('The file to delete: an absolute path, or a path relative to the first root.'),
});

/** The tool's name. */
export const DELETE_FILE = 'delete_file';

/** The registration of `delete_file` (as `McpServer.registerTool` takes it), shared by every way of serving it. */
export const DELETE_FILE_CONFIG = {
  title: 'Delete a file',
  description:
    "Permanently deletes one regular file inside the server's roots. A human is asked to confirm the exact file first; the file is re-checked right before it is deleted.",
  inputSchema: DeleteFileInput,
  annotations: { destructiveHint: true, readOnlyHint: false, idempotentHint: false, openWorldHint: false },
};
