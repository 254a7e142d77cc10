import {ExitCode} from './exitCodes.js'

/**
 * An error the operator can act on: a stable code for scripts, its exit code, a
 * message that says what happened, and actions that say what to do next. Anything thrown that is
 * not an AirlockError is a bug and exits 1.
 */
export class AirlockError extends Error {
  readonly code: string
  readonly exit: ExitCode
  readonly actions: string[]

  constructor(code: string, exit: ExitCode, message: string, actions: string[] = [], options?: {cause?: unknown}) {
    super(message, options)
    this.name = 'AirlockError'
    this.code = code
    this.exit = exit
    this.actions = actions
  }
}

/**
 * An action that sends the operator to `airlock doctor`. Written through this helper so the base
 * command can recognise it and leave it out when the command that failed is doctor itself.
 */
export const doctorAction = (what: string) => `airlock doctor ${what}`

export const isDoctorAction = (action: string) => action.startsWith(doctorAction(''))

export const usageError = (message: string, actions: string[] = []) =>
  new AirlockError('USAGE', ExitCode.usage, message, actions)

export const unsupportedSchemaError = (message: string, actions: string[] = []) =>
  new AirlockError('UNSUPPORTED_SCHEMA', ExitCode.unsupportedSchema, message, actions)

export const unreachableError = (message: string, actions: string[] = [], cause?: unknown) =>
  new AirlockError('DATABASE_UNREACHABLE', ExitCode.unreachable, message, actions, {cause})
