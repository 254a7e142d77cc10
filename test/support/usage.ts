import {expect} from 'vitest'

import {AirlockError} from '../../src/errors.js'

/** Runs `fn`, expects it to throw a usage error (exit 2), returns the message. */
export function usageMessage(fn: () => unknown): string {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(AirlockError)
    expect((error as AirlockError).exit).toBe(2)
    return (error as AirlockError).message
  }

  throw new Error('expected a usage error')
}
