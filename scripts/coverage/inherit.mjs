// Loaded into every Node.js process of a coverage run (`npm run coverage`) by
// NODE_OPTIONS="--import=<this file>". It passes NODE_V8_COVERAGE and that NODE_OPTIONS on to every
// child process, also where the caller spawns with a reduced environment: the SDK's stdio
// transports start a server with only HOME, PATH, SHELL, TERM, USER and LOGNAME unless told
// otherwise, and the proxy starts its upstream the same way, so without this the built CLI started
// by an e2e test (and what it starts) would write no coverage. Nothing else changes: no output,
// no other variable, no handler. Not used by `npm test`.
import childProcess, { ChildProcess } from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';

const dir = process.env.NODE_V8_COVERAGE;
const nodeOptions = process.env.NODE_OPTIONS;

if (dir && nodeOptions) {
  const wanted = { NODE_V8_COVERAGE: dir, NODE_OPTIONS: nodeOptions };

  // A child's NODE_OPTIONS keeps what the caller set and gains ours (once).
  const merged = (own) =>
    own === undefined || own === '' ? nodeOptions : own.includes(nodeOptions) ? own : `${nodeOptions} ${own}`;

  // Asynchronous spawns (spawn, execFile, exec, fork, cross-spawn) all end in ChildProcess#spawn
  // with the environment already as "KEY=VALUE" pairs.
  const spawn = ChildProcess.prototype.spawn;
  ChildProcess.prototype.spawn = function spawnWithCoverage(options) {
    if (options && Array.isArray(options.envPairs)) {
      const pairs = options.envPairs.filter(
        (p) => !p.startsWith('NODE_V8_COVERAGE=') && !p.startsWith('NODE_OPTIONS='),
      );
      const own = options.envPairs.find((p) => p.startsWith('NODE_OPTIONS='));
      pairs.push(
        `NODE_V8_COVERAGE=${wanted.NODE_V8_COVERAGE}`,
        `NODE_OPTIONS=${merged(own?.slice('NODE_OPTIONS='.length))}`,
      );
      options = { ...options, envPairs: pairs };
    }
    return spawn.call(this, options);
  };

  // The synchronous ones take an `env` option and do not go through ChildProcess.
  const withEnv = (args) => {
    const i = args.findIndex((a) => a !== null && typeof a === 'object' && !Array.isArray(a));
    if (i < 0 || !args[i].env) return args; // no env given: process.env (which has both) is inherited
    const env = { ...args[i].env, NODE_V8_COVERAGE: dir, NODE_OPTIONS: merged(args[i].env.NODE_OPTIONS) };
    const copy = [...args];
    copy[i] = { ...args[i], env };
    return copy;
  };
  for (const name of ['spawnSync', 'execFileSync', 'execSync']) {
    const original = childProcess[name];
    childProcess[name] = function (...args) {
      return original.apply(this, withEnv(args));
    };
  }
  syncBuiltinESMExports();
}
