/**
 * `mcp-confirm approvers enroll|list|remove`: managing the approvers file of passkey approval.
 * Enrol prints the enrolment URL as the first line of stdout (the contract for outside tests);
 * everything else goes to stderr, except `list`, whose listing is its output.
 *
 * @module
 */
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { checkApproverName, readApprovers, writeApprovers } from '../approval/approvers.js';
import { describePrincipal } from '../principals.js';
import { isLocalhostName } from '../approval/publicUrl.js';
import { enrollApprover } from '../approval/enroll.js';
import { ConfigError } from '../errors.js';
import type { ApproversCommand } from './approversArgs.js';
import { configMessage, EXIT_USAGE } from './common.js';

/** True when `dir` is a directory this process may create files in. */
function isWritableDirectory(dir: string): boolean {
  try {
    if (!statSync(dir).isDirectory()) return false;
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Runs one approvers command; returns the exit code (0 done, 1 refused or timed out, 2 usage). */
export async function runApprovers(command: ApproversCommand): Promise<number> {
  const err = (line: string): void => void process.stderr.write(`mcp-confirm: ${line}\n`);
  try {
    switch (command.kind) {
      case 'approvers-enroll': {
        // A bad --name is a usage error (exit 2), told before anything starts.
        try {
          checkApproverName(command.name);
        } catch (e) {
          err(`--name: ${(e as Error).message}`);
          return EXIT_USAGE;
        }
        // Checked before the ceremony: a file that cannot be written would leave a passkey on the authenticator for nothing.
        const dir = dirname(resolve(command.approvers));
        if (!isWritableDirectory(dir)) {
          err(
            `--approvers ${command.approvers}: its directory ${dir} does not exist or is not writable (create it first, e.g. mkdir -p -m 700 ${dir}); nothing was enrolled`,
          );
          return EXIT_USAGE;
        }
        const approver = await enrollApprover({
          approversPath: command.approvers,
          name: command.name,
          replace: command.replace,
          ...(command.port !== undefined ? { port: command.port } : {}),
          ...(command.publicUrl !== undefined ? { publicUrl: command.publicUrl } : {}),
          principals: command.principals,
          timeoutSeconds: command.timeoutSeconds,
          ...(command.approversRequired > 1 ? { approversRequired: command.approversRequired } : {}),
          onUrl: (url, port) => {
            process.stdout.write(`${url}\n`);
            const where = command.publicUrl
              ? `in a browser whose requests to ${command.publicUrl.origin} reach this command on 127.0.0.1:${port} / [::1]:${port} (e.g. through your TLS proxy on this host; RP ID ${command.publicUrl.hostname})`
              : 'in a browser on this machine';
            err(`open the URL above ${where} and press "Enrol passkey" (waiting up to ${command.timeoutSeconds} s)`);
            if (
              command.publicUrl &&
              command.publicUrl.protocol === 'http:' &&
              !isLocalhostName(command.publicUrl.hostname)
            ) {
              err(
                `warning: browsers allow passkeys only in a secure context: http://${command.publicUrl.host} is one only for localhost names; use https`,
              );
            }
          },
          onLog: err,
        });
        err(`enrolled ${approver.name} (credential ${approver.credentialId.slice(0, 12)}…) in ${command.approvers}`);
        return 0;
      }
      case 'approvers-list': {
        if (!existsSync(command.approvers)) {
          err(`--approvers ${command.approvers} does not exist`);
          return EXIT_USAGE;
        }
        const file = await readApprovers(command.approvers);
        for (const a of file.approvers) {
          process.stdout.write(
            `${a.name}\tcredential ${a.credentialId}\tprincipals ${a.principals.map(describePrincipal).join('; ')}\trp ${file.rpId}\tenrolled ${a.enrolledAt}\n`,
          );
        }
        if (file.approvers.length === 0) err(`no approvers in ${command.approvers}`);
        return 0;
      }
      case 'approvers-remove': {
        const name = checkApproverName(command.name);
        const file = await readApprovers(command.approvers);
        const kept = file.approvers.filter((a) => a.name !== name);
        if (kept.length === file.approvers.length) {
          err(`no approver named ${JSON.stringify(name)} in ${command.approvers}`);
          return 1;
        }
        await writeApprovers(command.approvers, { ...file, approvers: kept });
        err(
          `removed ${name}; ${kept.length} approver(s) left${kept.length === 0 ? ' (a server with --approval passkey now refuses to start with this file)' : ''}`,
        );
        return 0;
      }
    }
  } catch (e) {
    // Enrolment that saved nothing: 1; an approvers file list or remove cannot use: 2.
    if (e instanceof ConfigError) {
      const enrolling = command.kind === 'approvers-enroll';
      err(configMessage(e, enrolling ? command.publicUrl : undefined));
      return enrolling ? 1 : EXIT_USAGE;
    }
    throw e;
  }
}
