/**
 * The upstream's supervisor: `node supervisor.js COMMAND [ARG…]`, started by the proxy in place of
 * a stdio upstream's command (see `Upstream.spawn`), so that no upstream outlives its proxy,
 * however the proxy ends: the end of its stdin, SIGTERM, SIGINT, or SIGKILL (when the proxy can run
 * no code at all).
 *
 * Its first argument may be `--parent=PID`, the proxy's process id (the proxy always gives it);
 * without it, the parent at start-up is taken as the proxy.
 *
 * It starts COMMAND in a process group of its own (`detached`: a new session, so a terminal's
 * Ctrl-C does not reach it either), with the upstream's stdin, stdout and stderr being this
 * process's (the proxy's pipes, as if the proxy had spawned it), on Linux. The proxy's end is seen
 * as this process's parent changing (read from /proc/self/stat every {@link PARENT_LOOK_MS}: however
 * the proxy ends, SIGKILL included, the kernel gives this process another parent when it exits);
 * the upstream itself reads end-of-file from the proxy's pipe as soon as the proxy closes it or
 * ends. So no message to the upstream passes through this process (measured on a loaded 2-core
 * machine: that hop cost a passed-through call 0.1 to 0.3 ms, 13 to 18 % of a bare SDK relay's
 * time). Where there is no /proc, the upstream's stdin is fed from this process's stdin instead,
 * and its end-of-file is how the proxy's end is seen. Then it ends the upstream's whole group, and (on Linux, from /proc) every process of
 * the upstream's session, whatever group it is in (a shell with job control, `set -m`, puts each
 * job in a group of its own), in order:
 * 1. the upstream's stdin is closed (a server that exits at the end of its input does so; on Linux
 *    it has seen the proxy's end of the pipe already);
 * 2. after {@link GRACE_MS}, if any process of the group or session is left, SIGTERM to each;
 * 3. after {@link GRACE_MS} more, SIGKILL to each;
 * so the last process of the group ends about a second after the proxy (the two waits; later only
 * on a machine too loaded to run these timers on time). A SIGTERM, SIGINT or SIGHUP to this process starts at step 2 (the SDK's transport
 * sends SIGTERM to a probe sibling at once and SIGKILL a second later). When the upstream exits
 * by itself, what is left of its group (children it started) gets steps 2 and 3.
 *
 * This process can itself be killed before it is done: the SDK's transport ends a probe sibling
 * with SIGTERM and SIGKILL one second later, and a closing one with SIGKILL after 4 s, whatever
 * the machine's load. So it first starts a reaper, `/bin/sh` running {@link REAPER_SCRIPT} in a
 * session of its own (no signal meant for the proxy or for this process reaches it), blocked
 * reading a pipe from this process: told `done` once the group is ended, it exits; at the end of
 * the pipe without it (this process was killed), it sends the group and the session's processes
 * (a loop over /proc/PID/stat in POSIX sh, where there is /proc) SIGTERM, then SIGKILL a second
 * later. It waits in a blocking read, not on a timer, so load only delays it.
 *
 * Not ended: a process that left the upstream's session (`setsid`, a daemon's double fork): nothing
 * short of a container, a cgroup or a systemd unit holds those (see docs/proxy.md).
 *
 * It then exits as the upstream did: the same exit code, or killed by the same signal, so the
 * proxy's down reason ("it exited with code 3", "it was killed by SIGKILL") is the upstream's. A
 * command that cannot be started (not found, not executable) is reported on stderr with the
 * system's reason and exit code {@link SPAWN_FAILED_EXIT} (127, as a shell reports it).
 *
 * POSIX only (process groups); on Windows the proxy starts the upstream directly.
 *
 * Imports nothing but `node:` modules, so it starts in a few tens of milliseconds.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';

/** The wait before each escalation (stdin closed → SIGTERM → SIGKILL): half a second. */
const GRACE_MS = 500;
/**
 * The reaper (`sh -c REAPER_SCRIPT`): reads the upstream's process group id, then waits for `done`;
 * at the end of its input without it, ends the group (SIGTERM, a second, SIGKILL).
 */
const REAPER_SCRIPT = [
  'read -r group || exit 0',
  'read -r word',
  '[ "$word" = done ] && exit 0',
  // ends SIGNAL: the group, then (where there is /proc) every process whose session id (field 6 of
  // /proc/PID/stat, the 4th after the parenthesised command name) is the upstream's.
  'ends() { kill -"$1" "-$group" 2>/dev/null; [ -r /proc/self/stat ] || return 0; for f in /proc/[0-9]*/stat; do line=; { read -r line < "$f"; } 2>/dev/null || continue; rest=${line##*) }; set -- "$1" $rest; [ "$5" = "$group" ] || continue; p=${f#/proc/}; kill -"$1" "${p%/stat}" 2>/dev/null; done; }',
  'ends TERM',
  'sleep 1',
  'ends KILL',
  'exit 0',
].join('\n');
/** How often the group is looked at while waiting for it to be empty. */
const LOOK_MS = 25;
/** How often this process's parent is looked at (Linux), to see the proxy's end: a tenth of a second. */
const PARENT_LOOK_MS = 100;
/** The exit code when COMMAND cannot be started. */
const SPAWN_FAILED_EXIT = 127;

/**
 * The live (not zombie) processes of session `sid`, read from Linux's /proc (field 6 of
 * /proc/PID/stat, after the command name in parentheses, which may itself hold ") "); none where
 * there is no /proc (only the group is ended there).
 */
function sessionMembers(sid: number): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const members: number[] = [];
  for (const name of names) {
    if (!/^[0-9]+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'latin1');
    } catch {
      continue; // ended while looked at
    }
    const [state, , , session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(session) !== sid || state === 'Z' || state === 'X') continue;
    members.push(Number(name));
  }
  return members;
}

/**
 * This process's parent as the kernel says now (field 4 of /proc/self/stat; Node's `process.ppid`
 * is read once, at start-up), or undefined where there is no /proc.
 */
function parentNow(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'latin1');
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isSafeInteger(parent) ? parent : undefined;
  } catch {
    return undefined;
  }
}

/** The first argument the proxy passes: `--parent=PID`, its own process id. */
const PARENT_ARG = /^--parent=([0-9]+)$/;

function main(argv: readonly string[]): void {
  // The proxy's pid as the proxy gave it: if the proxy ended before this process started, the parent
  // read now is already another one, and the end is seen at the first look.
  const given = PARENT_ARG.exec(argv[0] ?? '');
  const [command, ...args] = given ? argv.slice(1) : argv;
  const expectedParent = given ? Number(given[1]) : process.ppid;
  if (command === undefined || command === '') {
    process.stderr.write('mcp-confirm proxy: supervisor: no upstream command given\n');
    process.exit(2);
  }
  let child: ChildProcess | undefined;
  let ending = false;
  let status: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited: Array<() => void> = [];

  /** Whether any process of the upstream's group is left (zombies of another parent included: harmless), or of its session. */
  const groupLeft = (): boolean => {
    if (child?.pid === undefined) return false;
    try {
      process.kill(-child.pid, 0);
      return true;
    } catch {
      return sessionMembers(child.pid).length > 0;
    }
  };
  const signalGroup = (signal: NodeJS.Signals): void => {
    if (child?.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // The group is empty already.
    }
    // Process groups the upstream made in its session (a shell's job control): each of their processes.
    for (const pid of sessionMembers(child.pid)) {
      try {
        process.kill(pid, signal);
      } catch {
        // Ended meanwhile.
      }
    }
  };
  /** Resolves once the group is empty, or `ms` later (by the clock: a loaded machine runs timers late). */
  const groupGone = async (ms: number): Promise<void> => {
    const until = Date.now() + ms;
    while (Date.now() < until && groupLeft()) await new Promise((r) => setTimeout(r, LOOK_MS));
  };
  /** Resolves once the upstream itself (the group's leader) has exited, or after `ms`. */
  const leaderGone = (ms: number): Promise<void> =>
    status !== undefined
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          exited.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });

  /** Exits as the upstream did (its code, or its signal raised again on this process). */
  const exitAsUpstream = (): void => {
    const signal = status?.signal ?? null;
    if (signal === null) process.exit(status?.code ?? 1);
    for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    // A signal whose default action is not to end the process (SIGPIPE is ignored by Node).
    setTimeout(() => process.exit(128 + (constants.signals[signal] ?? 0)), 100).unref();
  };

  /** Ends the upstream's group (steps 1–3 from `from`), then exits as the upstream did. */
  const end = async (from: 'stdin' | 'signal'): Promise<void> => {
    if (ending) return;
    ending = true;
    if (from === 'stdin') {
      child?.stdin?.end();
      await leaderGone(GRACE_MS);
      await groupGone(0);
    }
    if (groupLeft()) {
      signalGroup('SIGTERM');
      await groupGone(GRACE_MS);
    }
    if (groupLeft()) signalGroup('SIGKILL');
    await leaderGone(Number.POSITIVE_INFINITY);
    // The group is ended: the reaper stands down (so it can never signal a group id used again).
    await new Promise<void>((resolve) => {
      const pipe = reaper.stdin;
      if (pipe === null || !pipe.writable) return resolve();
      pipe.once('error', () => resolve()); // the reaper is gone already
      pipe.end('done\n', () => resolve());
    });
    exitAsUpstream();
  };

  // Before the upstream exists, so that no signal can find it started and unsupervised.
  for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(s, () => void end('signal'));

  // The reaper first: an upstream never runs without it.
  const reaper = spawn('/bin/sh', ['-c', REAPER_SCRIPT, 'mcp-confirm-reaper'], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  reaper.on('error', () => {}); // without /bin/sh: this process still ends the group itself
  reaper.unref();
  // Linux: the upstream reads the proxy's pipe itself, and the proxy's end is seen as a new parent.
  const direct = parentNow() !== undefined;
  child = spawn(command, args, { stdio: [direct ? 'inherit' : 'pipe', 'inherit', 'inherit'], detached: true });
  if (child.pid !== undefined) reaper.stdin?.write(`${child.pid}\n`);
  child.on('error', (e: NodeJS.ErrnoException) => {
    // Never started (the only 'error' before 'spawn'): nothing to end.
    if (child?.pid !== undefined) return;
    process.stderr.write(`mcp-confirm proxy: the upstream command could not be started: ${e.message}\n`);
    reaper.stdin?.end(); // no group: it exits at the end of its input without a group id
    process.exit(SPAWN_FAILED_EXIT);
  });
  child.on('exit', (code, signal) => {
    status = { code, signal };
    for (const w of exited.splice(0)) w();
    // Exited by itself: what it left of its group is ended too.
    void end('signal');
  });
  if (direct) {
    const watch = setInterval(() => {
      if (parentNow() === expectedParent) return;
      clearInterval(watch);
      void end('stdin');
    }, PARENT_LOOK_MS);
    return;
  }
  // The upstream stops reading (it exited): what is still written to it is dropped.
  child.stdin?.on('error', () => {});
  process.stdin.pipe(child.stdin!);
  process.stdin.on('end', () => void end('stdin'));
  process.stdin.on('error', () => void end('stdin'));
}

main(process.argv.slice(2));
