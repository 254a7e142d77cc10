// The help subpath, not '@oclif/core': the package index also loads the parser, the flag
// builders and semver (its Node version check), which `airlock COMMAND --help` never uses.
import type {Command} from '@oclif/core'
import {CommandHelp, Help, type HelpFormatter} from '@oclif/core/help'

import {ExitCode} from '../exitCodes.js'
import {wrapPlainText} from './wrapPlainText.js'

/**
 * What each exit code means, in one line (the full table is in the exit codes page of the docs);
 * each command's page lists its own from here (commandPages.ts).
 */
export const exitCodeMeanings: Record<ExitCode, string> = {
  [ExitCode.ok]: 'done (a writer: every item completed, was already done, or there was nothing to do)',
  [ExitCode.internal]: 'a bug in airlock (AIRLOCK_DEBUG=1 prints the stack)',
  [ExitCode.usage]: 'bad flag or input, refused (no --yes without a terminal), or a missing privilege; nothing written',
  [ExitCode.conflict]:
    'something changed since it was selected or read, something named explicitly was in another state, or an item was refused (see previous_state, detail); never what a filter merely matched',
  [ExitCode.notFound]: 'something named explicitly does not exist',
  [ExitCode.partialFailure]:
    'some items failed (lock or statement timeout, a serialization conflict, the scheduler kept changing them); running again is safe',
  [ExitCode.auditFindings]: 'findings at or above --fail-on',
  [ExitCode.unreachable]: 'database unreachable, login refused, TLS failed, or the session was lost',
  [ExitCode.unsupportedSchema]: 'not an Airflow 3 schema airlock supports (doctor names the head)',
  [ExitCode.readOnly]:
    'can read, cannot write: the server accepts no writes (a standby, default_transaction_read_only), or (doctor) the user lacks privileges a writer needs; nothing written, the read-only commands still work',
  [ExitCode.interrupted]: 'interrupted (Ctrl-C, SIGTERM): transactions in flight finished or rolled back',
}

const connected: ExitCode[] = [
  ExitCode.ok,
  ExitCode.internal,
  ExitCode.usage,
  ExitCode.unreachable,
  ExitCode.interrupted,
]
const onAirflow: ExitCode[] = [...connected, ExitCode.unsupportedSchema]
const writer: ExitCode[] = [
  ...onAirflow,
  ExitCode.conflict,
  ExitCode.notFound,
  ExitCode.partialFailure,
  ExitCode.readOnly,
]

/** The exit codes each command can end with; the sandbox's commands add 7 (the server did not start or answer); others not listed have 0, 1 and 2. */
export const commandExitCodes: Record<string, ExitCode[]> = {
  complete: writer,
  'replay-events': writer,
  undo: writer,
  'audit-events': [...onAirflow, ExitCode.partialFailure, ExitCode.auditFindings, ExitCode.readOnly],
  'audit-locks': [...connected, ExitCode.partialFailure, ExitCode.auditFindings],
  'export-events': [...onAirflow, ExitCode.partialFailure],
  explain: [...onAirflow, ExitCode.notFound, ExitCode.auditFindings],
  doctor: [...onAirflow, ExitCode.readOnly],
  bench: connected,
}

/**
 * oclif renders every help string (each flag's name and description: 179 strings for `complete
 * --help`) as an EJS template, compiling a new function for each: 15 ms of that command's 200 ms.
 * Only the examples hold a tag (`<%= config.bin %>`). A string with neither an opening nor a
 * closing tag renders to itself, so only the others go to EJS and the output is the same.
 */
function renderTemplatesOnly(formatter: HelpFormatter): void {
  const renderTemplate = formatter.render
  formatter.render = (input) => (input.includes('<%') || input.includes('%>') ? renderTemplate(input) : input)
}

class AirlockCommandHelp extends CommandHelp {
  constructor(...args: ConstructorParameters<typeof CommandHelp>) {
    super(...args)
    renderTemplatesOnly(this)
  }

  override wrap(body: string, spacing = this.indentSpacing): string {
    return wrapPlainText(this.render(body), this.opts.maxWidth - spacing) ?? super.wrap(body, spacing)
  }
}

/**
 * Columns oclif's help may run past its width: a flag's description is wrapped to the width minus
 * its indentation, then indented by two more (82-column lines at 80). airlock asks for that much
 * less, so every line fits the terminal.
 */
export const helpMargin = 2

/** oclif's help, with every command's page ending in the exit codes that command can return. */
export default class AirlockHelp extends Help {
  protected override CommandHelpClass = AirlockCommandHelp

  constructor(...args: ConstructorParameters<typeof Help>) {
    super(...args)
    this.opts = {...this.opts, maxWidth: Math.max(30, this.opts.maxWidth - helpMargin)}
    renderTemplatesOnly(this)
  }

  override wrap(body: string, spacing = this.indentSpacing): string {
    return wrapPlainText(this.render(body), this.opts.maxWidth - spacing) ?? super.wrap(body, spacing)
  }

  override formatCommand(command: Command.Loadable): string {
    const codes = exitCodesOf(command.id)
    return `${super.formatCommand(command)}\n\n${this.section(
      'EXIT CODES',
      codes.map((code): [string, string] => [String(code), exitCodeMeanings[code]]),
    )}`
  }
}

export function exitCodesOf(id: string): ExitCode[] {
  const codes =
    commandExitCodes[id] ?? (id.startsWith('sandbox:') ? connected : [ExitCode.ok, ExitCode.internal, ExitCode.usage])
  return [...new Set(codes)].sort((a, b) => a - b)
}
