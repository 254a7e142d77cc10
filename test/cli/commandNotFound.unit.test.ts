import {describe, expect, it} from 'vitest'

import {unknownCommandError} from '../../src/cli/commandNotFound.js'
import {ExitCode} from '../../src/exitCodes.js'

const commands = ['audit-events', 'audit-locks', 'complete', 'doctor', 'help', 'sandbox start', 'sandbox stop']

describe('an unknown command', () => {
  it('is a usage error naming the nearest commands, closest first', () => {
    const error = unknownCommandError('complet', commands, 'airlock')
    expect(error.exit).toBe(ExitCode.usage)
    expect(error.code).toBe('USAGE')
    expect(error.message).toBe('Unknown command "complet": did you mean complete?')
    expect(error.actions).toEqual(['airlock complete --help shows how to use it; airlock --help lists every command.'])
    expect(unknownCommandError('sandbox strat', commands, 'airlock').message).toBe(
      'Unknown command "sandbox strat": did you mean sandbox start or sandbox stop?',
    )
    expect(unknownCommandError('audit-event', commands, 'airlock').message).toContain('did you mean audit-events?')
  })

  it('with nothing near, says so and where the list is', () => {
    const error = unknownCommandError('frobnicate', commands, 'airlock')
    expect(error.message).toBe('Unknown command "frobnicate".')
    expect(error.actions).toEqual(['airlock --help lists every command.'])
  })

  it('never echoes what does not look like a command (a URL pasted first, a whole line)', () => {
    const url = unknownCommandError('postgresql://airflow:Sup3rSecretPw@db/airflow', commands, 'airlock')
    expect(url.message).toBe('Unknown command.')
    expect(url.message + url.actions.join()).not.toContain('Sup3rSecretPw')
    expect(unknownCommandError('x'.repeat(200), commands, 'airlock').message).toBe('Unknown command.')
  })
})
