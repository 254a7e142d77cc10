import {usageError} from '../errors.js'
import {colorAllowed} from '../output/color.js'
import {interruptedError} from './interrupt.js'

/**
 * Without --yes, a write touching more than one item asks on a terminal and is refused (exit 2,
 * naming --yes) when nobody can answer: stdin is not a terminal, or the output is
 * machine-readable. The question names what it acts on: task instances, events, duplicates.
 */
export async function confirmBulkWrite(options: {
  count: number
  /** Of `count`, how many the write would change (the rest left as they are), where known. */
  changing?: number | undefined
  action: string
  noun: string
  yes: boolean
  dryRun: boolean
  machineOutput: boolean
  /** Ask even for one item: a delete is asked about however small it is. */
  always?: boolean
}): Promise<void> {
  const asked = options.changing ?? options.count
  if (options.yes || options.dryRun || asked === 0 || (asked === 1 && !options.always)) return
  // The number asked about is what would change; the rest of the selection is said beside it.
  const rest = options.count - asked
  const what = `${asked} ${options.noun}${rest > 0 ? ` (of ${options.count} selected; the other ${rest} would be left as they are)` : ''}`
  if (options.machineOutput || !process.stdin.isTTY) {
    throw usageError(`Refusing to ${options.action} ${what} without confirmation.`, [
      options.always ? 'Pass --yes to confirm.' : 'Pass --yes to confirm (or --dry-run to see what would happen).',
    ])
  }

  // Loaded only when a question is actually asked (it is ~8 MB of modules).
  const {confirm} = await import('@inquirer/prompts')
  let answer: boolean
  try {
    answer = await confirm(
      {
        message: `${capitalise(options.action)} ${what}?`,
        default: false,
        theme: promptTheme(),
      },
      {output: process.stderr},
    )
  } catch (error) {
    // Ctrl+C at the prompt is a keypress in raw mode, not a signal: inquirer rejects instead.
    if (error instanceof Error && error.name === 'ExitPromptError') throw interruptedError('SIGINT')
    throw error
  }

  if (!answer) throw usageError('Nothing written: not confirmed.')
}

const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)

/**
 * The confirmation prompt's theme: inquirer's own, or without colour (--no-color, NO_COLOR).
 * inquirer styles through Node's styleText, which lets FORCE_COLOR win over NO_COLOR, so every
 * part a confirm prompt styles is replaced with the same text unstyled.
 */
export function promptTheme(): typeof plainPromptTheme | undefined {
  return colorAllowed() ? undefined : plainPromptTheme
}

const plainPromptTheme = {
  prefix: {idle: '?', done: '✔'},
  spinner: {frames: ['-', '\\', '|', '/']},
  style: {
    answer: (text: string) => text,
    message: (text: string) => text,
    error: (text: string) => `> ${text}`,
    defaultAnswer: (text: string) => `(${text})`,
    help: (text: string) => text,
    highlight: (text: string) => text,
    key: (text: string) => `<${text}>`,
    // The default answer's hint (y/N): the default side upper-cased, as inquirer does for letters.
    confirmDefault: capitalise,
  },
}
