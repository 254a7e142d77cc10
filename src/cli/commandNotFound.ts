// Type-only: oclif loads this hook for every mistyped command, before any command module.
import type {Hook, Interfaces} from '@oclif/core'

import {AirlockError, usageError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import {closeMatches} from '../input/closeMatches.js'
import {earlySignal} from './interrupt.js'

/** What is quoted back: a command's words, never a pasted URL (its password) or a whole line. */
const commandLike = /^[\w.: -]{1,60}$/

/**
 * The usage error of a command that does not exist, naming the nearest commands by edit distance
 * (closest first). Nothing is run on a guess: `complet --yes` must not become `complete --yes`.
 */
export function unknownCommandError(typed: string, commands: readonly string[], bin: string): AirlockError {
  const list = `${bin} --help lists every command.`
  if (!commandLike.test(typed)) return usageError('Unknown command.', [list])
  const near = closeMatches(typed, commands)
  if (near.length === 0) return usageError(`Unknown command "${typed}".`, [list])
  const choices = near.length === 1 ? near[0]! : `${near.slice(0, -1).join(', ')} or ${near.at(-1)!}`
  return usageError(`Unknown command "${typed}": did you mean ${choices}?`, [
    `${bin} ${near[0]!} --help shows how to use it; ${list}`,
  ])
}

/** `id` (oclif's `sandbox:strat`) as the operator typed it, against every command airlock lists. */
export function unknownCommand(config: Interfaces.Config, id: string): AirlockError {
  const named = (commandId: string) => commandId.replaceAll(':', config.topicSeparator)
  const commands = config.commands
    .filter((command) => !command.hidden)
    .flatMap((command) => [command.id, ...command.aliases])
    .map(named)
  return unknownCommandError(named(id), commands, config.bin)
}

/**
 * The words given to `airlock help` (`sandbox start`, `complete`): the error when they name no
 * command or topic, where oclif's help throws a plain error (exit 1, "a bug in airlock").
 */
export function unknownHelpSubject(config: Interfaces.Config, words: readonly string[]): AirlockError | undefined {
  if (words.length === 0) return undefined
  const known = (id: string) => config.findCommand(id) ?? config.findTopic(id)
  let id = words[0]!
  if (!known(id)) return unknownCommand(config, words.join(':'))
  for (const word of words.slice(1)) {
    id = `${id}:${word}`
    if (!known(id)) return unknownCommand(config, id)
  }
  return undefined
}

/**
 * oclif's command_not_found hook: the error as every command prints one (stderr, or the envelope
 * on stdout under --json) and exit 2, as for any usage error. oclif's own answer is exit 2 with no
 * suggestion; its not-found plugin asks "Did you mean …? (Y/n)" on a terminal and then runs the
 * guess with the arguments given, and without a terminal suggests nothing and exits 127.
 */
const commandNotFound: Hook<'command_not_found'> = async function ({id, argv, config}) {
  const error = unknownCommand(config, id)
  const text = argv?.includes('--json')
    ? {
        stream: process.stdout,
        line: JSON.stringify({
          status: error.exit,
          error: {name: error.name, code: error.code, message: error.message, actions: error.actions},
        }),
      }
    : {stream: process.stderr, line: [`Error: ${error.message}`, ...error.actions.map((a) => `  → ${a}`)].join('\n')}
  // Written before oclif exits the process (a pipe is asynchronous on macOS).
  await new Promise((resolve) => text.stream.write(`${text.line}\n`, resolve))
  // A signal came while oclif loaded: interrupted, as every command ends after one (nothing ran).
  this.exit(earlySignal() === undefined ? ExitCode.usage : ExitCode.interrupted)
}

export default commandNotFound
