import {AirlockError, isDoctorAction} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import {databaseFailureOf} from './databaseFailures.js'

export interface ErrorEnvelope {
  status: number
  error: {name: string; code: string; message: string; actions: string[]}
  /** A batch the failure cut short: every item that had finished, as the success envelope lists them. */
  result?: unknown
}

/**
 * The one mapping of a failure to what the operator reads and the exit code: an AirlockError as
 * it says, a database failure by its SQLSTATE or driver error (databaseFailures.ts), anything else
 * as a bug (exit 1). Every text goes through `scrub`; `commandId` drops "run airlock doctor" from
 * doctor's own failures.
 */
export function errorEnvelope(
  error: unknown,
  scrub: (text: string) => string,
  commandId: string | undefined,
): ErrorEnvelope {
  // What to do next, without "run airlock doctor" when the command that failed is doctor.
  const actionsFor = (actions: readonly string[]): string[] =>
    commandId === 'doctor' ? actions.filter((action) => !isDoctorAction(action)) : [...actions]
  if (error instanceof AirlockError) {
    return {
      status: error.exit,
      error: {
        name: error.name,
        code: error.code,
        message: scrub(error.message),
        actions: actionsFor(error.actions).map((a) => scrub(a)),
      },
    }
  }

  const known = databaseFailureOf(error)
  if (known) {
    return {
      status: known.exit,
      error: {
        name: 'AirlockError',
        code: known.code,
        message: scrub(known.message),
        actions: actionsFor(known.actions),
      },
    }
  }

  const message = error instanceof Error ? error.message : String(error)
  return {
    status: ExitCode.internal,
    error: {
      name: 'InternalError',
      code: 'INTERNAL',
      message: scrub(`Unexpected failure (a bug in airlock): ${message}`),
      actions: ['Re-run with AIRLOCK_DEBUG=1 for the stack trace and report it.'],
    },
  }
}
