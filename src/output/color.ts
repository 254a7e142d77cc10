/**
 * Whether airlock may colour what it draws on a terminal (the progress spinner's frame, the
 * confirmation prompt). Off with `--no-color`, with NO_COLOR set to anything but the empty string
 * (https://no-color.org), or with FORCE_COLOR=0 or false; `--no-color` and NO_COLOR win over
 * FORCE_COLOR, because they are the operator saying no (chalk, under ora, would let FORCE_COLOR
 * win; Node's own styleText, under the prompt, too).
 *
 * Read from the process's arguments and environment rather than parsed flags: oclif renders
 * `--help` before any command parses its flags, and its colour library (ansis) decides the same
 * way, from the same arguments and NO_COLOR, so the help and the commands agree.
 */
export function colorAllowed(argv: readonly string[] = process.argv, env: NodeJS.ProcessEnv = process.env): boolean {
  // After `--`, an argument is an operand, not a flag.
  const terminator = argv.indexOf('--')
  if ((terminator === -1 ? argv : argv.slice(0, terminator)).includes('--no-color')) return false
  if (env.NO_COLOR) return false
  return env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false'
}
