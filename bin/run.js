#!/usr/bin/env node
// Production entry: runs the compiled commands in dist/ (built by `npm run build`, which `npm ci`
// runs through the prepare script). oclif finds them through oclif.manifest.json, which the same
// build writes, so it imports only the module of the command it runs.
import {existsSync, readdirSync, readFileSync, statSync} from 'node:fs'
import {arch, platform, release} from 'node:os'
import {join} from 'node:path'

// A signal that comes while oclif is still loading is remembered here, not obeyed: the command
// reports it as an interruption (exit 130, an envelope under --json) as soon as it starts. This is
// the first statement that runs: before it, only Node.js's own start-up, during which a signal
// ends the process by the signal (Node resets an inherited SIG_IGN and signal mask; no JavaScript
// runs earlier). test/cli/earlySignal.test.ts signals each moment from here on.
const early = (signal) => {
  globalThis.airlockEarlySignal ??= signal
}
process.on('SIGINT', early)
process.on('SIGTERM', early)
// Set when a command takes the early signal up (src/cli/interrupt.ts); one that never does
// (--version, help, autocomplete, a mistyped command) still ends as interrupted, below.
let earlySignalsTaken = false
globalThis.airlockReleaseEarlySignals = () => {
  earlySignalsTaken = true
  process.off('SIGINT', early)
  process.off('SIGTERM', early)
  // The single executable's launcher (scripts/executable/launcher.cjs) remembered signals before this file ran.
  globalThis.airlockLauncherSignals?.()
}

// In a source checkout (the package ships no tsconfig.json), a manifest older than the compiled
// commands means tsc ran without `npm run build`: oclif would list commands and flags from it.
if (existsSync(join(import.meta.dirname, '..', 'tsconfig.json'))) warnIfManifestStale()

const version = versionLine(process.argv.slice(2))
if (version) {
  process.stdout.write(`${version}\n`)
} else {
  // @oclif/core/execute, not the package index: the index also loads the parser, the flag builders
  // and semver for its Node version check (about 10 ms), which `--help` never uses.
  const {execute} = await import('@oclif/core/execute')
  await execute({dir: import.meta.url})
}
// The process ends here, by process.exit, never by its event loop draining: a draining Node closes
// its signal handles before the process is gone, and a SIGINT in that window would end it by the
// signal (what a supervisor reads as killed) instead of with the exit the command decided. This
// also keeps a stray handle from holding a cron job open after the result was printed. The
// writes are flushed first (a pipe is asynchronous on macOS).
await Promise.all([process.stdout, process.stderr].map((stream) => new Promise((resolve) => stream.write('', resolve))))
// A signal no command took up: what it printed is whole, but it was asked to stop, and a wrapper
// reads that from 130 as from any other command (nothing was written either way).
if (!earlySignalsTaken && globalThis.airlockEarlySignal !== undefined) process.exitCode = 130
process.exit()

/**
 * `airlock --version` (or `-v`) alone: the line oclif prints, its config.userAgent
 * (`name/version platform-arch node-version`), without loading oclif, which is most of the
 * command's time. oclif calls a WSL Linux "wsl" (is-wsl: "microsoft" in the kernel release or
 * /proc/version); where either says so, oclif answers itself. test/cli/startup.test.ts holds the
 * line equal to oclif's.
 */
function versionLine(argv) {
  if (argv.length !== 1 || (argv[0] !== '--version' && argv[0] !== '-v')) return undefined
  const mentionsMicrosoft = (text) => text.toLowerCase().includes('microsoft')
  const procVersion = existsSync('/proc/version') ? readFileSync('/proc/version', 'utf8') : ''
  if (process.platform === 'linux' && (mentionsMicrosoft(release()) || mentionsMicrosoft(procVersion))) return undefined
  const {name, version} = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8'))
  const cpu = arch() === 'ia32' ? 'x86' : arch()
  return `${name}/${version} ${platform()}-${cpu} node-${process.version}`
}

function warnIfManifestStale() {
  const manifest = join(import.meta.dirname, '..', 'oclif.manifest.json')
  const commands = join(import.meta.dirname, '..', 'dist', 'commands')
  if (!existsSync(manifest) || !existsSync(commands)) return
  const builtAt = statSync(manifest).mtimeMs
  const newer = readdirSync(commands, {recursive: true}).some(
    (file) => statSync(join(commands, file)).mtimeMs > builtAt,
  )
  if (newer) {
    process.stderr.write(
      'airlock: oclif.manifest.json is older than dist/commands/, so commands or flags compiled since may be missing. Run npm run build (tsc, then the manifest).\n',
    )
  }
}
