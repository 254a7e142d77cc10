import {spawn, type ChildProcessWithoutNullStreams} from 'node:child_process'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

export interface CliResult {
  code: number | null
  /** The signal that ended the process, when it did not exit by itself. */
  signal?: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/**
 * Runs the built CLI (bin/run.js → dist/) as an operator would, with a clean environment: no
 * connection variables leak in from the developer's shell unless the test passes them.
 */
export async function runCli(
  args: string[],
  options: {env?: Record<string, string>; stdin?: string} = {},
): Promise<CliResult> {
  const running = startCli(args, options)
  return running.finished
}

export interface RunningCli {
  /** For signals: `child.kill('SIGINT')`. */
  child: ChildProcessWithoutNullStreams
  /** Settles when the process has exited, with everything it printed. */
  finished: Promise<CliResult>
}

/** Starts the CLI and returns at once, for tests that signal or kill it while it works. */
export function startCli(args: string[], options: {env?: Record<string, string>; stdin?: string} = {}): RunningCli {
  const base: Record<string, string> = {PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LANG: 'C.UTF-8'}
  const child = spawn(process.execPath, [path.join(root, 'bin', 'run.js'), ...args], {
    env: {...base, ...options.env},
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const finished = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => {
      resolve({code, signal, stdout, stderr})
    })
  })
  child.stdin.end(options.stdin ?? '')
  return {child, finished}
}

/**
 * Runs a line airlock printed (`airlock complete …`, a resume line) as an operator pastes it into a
 * POSIX shell: the shell's own quoting, `airlock` being the built CLI.
 */
/** A URL's password, if it has one. */
const passwordOf = (url: string) => /^postgres(?:ql)?:\/\/[^:/@]*:([^@]*)@/.exec(url)?.[1]

/** The URL as airlock prints it: a password as ***, which the operator puts back when pasting. */
export const shownUrl = (url: string): string => {
  const password = passwordOf(url)
  return password ? url.replace(`:${password}@`, ':***@') : url
}

/** A printed command line with `url`'s password put back, as the note above it asks. */
export const withPasswordBack = (line: string, url: string): string => {
  const password = passwordOf(url)
  return password ? line.replace(':***@', `:${password}@`) : line
}

export async function runPasted(line: string): Promise<CliResult> {
  const script = `airlock() { '${process.execPath}' '${path.join(root, 'bin', 'run.js')}' "$@"; }\n${line}\n`
  const child = spawn('/bin/sh', ['-c', script], {
    env: {PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LANG: 'C.UTF-8'},
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({code, signal, stdout, stderr}))
  })
}

/** The one JSON envelope a --json run printed on stdout. */
export function envelope(result: CliResult): Record<string, unknown> {
  const lines = result.stdout.trim().split('\n')
  if (lines.length !== 1)
    throw new Error(`expected one line on stdout, got ${lines.length}:\n${result.stdout}\nstderr:\n${result.stderr}`)
  return JSON.parse(lines[0]!) as Record<string, unknown>
}
