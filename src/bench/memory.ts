import {spawn} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {AirlockError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'

/**
 * Peak resident memory of an airlock command run as an operator runs it (a child process of the
 * built CLI), read from /proc/<pid>/status VmHWM, the kernel's high-water mark, until it exits.
 */
const cliPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'bin', 'run.js')

export interface MemoryRun {
  args: string[]
  peakRssMb: number
  seconds: number
  exitCode: number | null
}

/**
 * `stdoutFile`: where the command's stdout goes (discarded otherwise), for a summary to read back.
 * `script`: another node script in airlock's place (a floor run the same way, start-up included).
 */
export async function peakRssOf(
  args: string[],
  acceptedExitCodes: readonly number[] = [0],
  stdoutFile?: string,
  script: string = cliPath,
): Promise<MemoryRun> {
  const stdout = stdoutFile ? fs.openSync(stdoutFile, 'w') : 'ignore'
  const started = Date.now()
  const child = spawn(process.execPath, [script, ...args], {stdio: ['ignore', stdout, 'pipe']})
  if (typeof stdout === 'number') fs.closeSync(stdout)
  let peakKb = 0
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)))
  const timer = setInterval(() => {
    try {
      const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8')
      const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0)
      if (kb > peakKb) peakKb = kb
    } catch {
      // The process is gone; the last reading stands.
    }
  }, 50)
  const exitCode = await new Promise<number | null>((resolve) => child.on('close', resolve))
  clearInterval(timer)
  if (exitCode === null || !acceptedExitCodes.includes(exitCode)) {
    const what = `airlock ${args[0]} exited ${exitCode ?? 'on a signal'} during the benchmark: ${stderr.trim()}`
    // Its own documented exit (the server went away: 7; the schema: 8; …) is the benchmark's too;
    // only a crash or its exit 1 is a bug.
    if (exitCode === null || exitCode === ExitCode.internal) throw new Error(what)
    throw new AirlockError('BENCH_COMMAND_FAILED', exitCode as ExitCode, what)
  }
  return {args, peakRssMb: peakKb / 1024, seconds: (Date.now() - started) / 1000, exitCode}
}
