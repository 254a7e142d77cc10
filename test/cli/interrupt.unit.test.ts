import {afterEach, describe, expect, it, vi} from 'vitest'

import {abandonAfterMs, Interrupts} from '../../src/cli/interrupt.js'
import {ExitCode} from '../../src/exitCodes.js'

/**
 * The signal handling of a command, in-process: what a signal does at each stage of a batch.
 * process.exit is replaced by a spy, so "the process exits with N" is what the handler asks for.
 */
describe('signals around a batch', () => {
  const listeners = {SIGINT: process.listeners('SIGINT'), SIGTERM: process.listeners('SIGTERM')}
  afterEach(() => {
    vi.restoreAllMocks()
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.removeAllListeners(signal)
      for (const listener of listeners[signal]) process.on(signal, listener)
    }
    process.exitCode = undefined
  })

  const exits = () => {
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never)
    return exit
  }

  it('in a batch, the first signal stops taking items and the second exits 130 at once', () => {
    const exit = exits()
    const firsts: string[] = []
    const interrupts = new Interrupts((signal) => firsts.push(signal))
    let stoppedAtOnce = 0
    interrupts.startBatch(() => stoppedAtOnce++)
    process.emit('SIGINT', 'SIGINT')
    expect(firsts).toEqual(['SIGINT'])
    expect(interrupts.requested()).toBe(true)
    expect(exit).not.toHaveBeenCalled()
    process.emit('SIGINT', 'SIGINT')
    expect(stoppedAtOnce).toBe(1)
    expect(exit).toHaveBeenCalledWith(ExitCode.interrupted)
  })

  it('the first signal in a batch gives up on the server abandonAfterMs later, unless the command is done by then', () => {
    exits()
    vi.useFakeTimers()
    try {
      const interrupts = new Interrupts(() => undefined)
      interrupts.startBatch(() => undefined)
      process.emit('SIGTERM', 'SIGTERM')
      expect(interrupts.stop.aborted).toBe(true)
      vi.advanceTimersByTime(abandonAfterMs - 1)
      expect(interrupts.abandon.aborted).toBe(false)
      vi.advanceTimersByTime(1)
      expect(interrupts.abandon.aborted).toBe(true)
      expect(interrupts.abandon.reason).toBe('SIGTERM')

      const done = new Interrupts(() => undefined)
      done.startBatch(() => undefined)
      process.emit('SIGINT', 'SIGINT')
      done.settle(ExitCode.interrupted)
      vi.advanceTimersByTime(abandonAfterMs)
      expect(done.abandon.aborted).toBe(false)
    } finally {
      vi.useRealTimers()
    }
  })

  it('once the batch settled on its exit (its summary printed), any number of signals exit with that exit, never 130', () => {
    const exit = exits()
    const interrupts = new Interrupts(() => undefined)
    let stoppedAtOnce = 0
    interrupts.startBatch(() => stoppedAtOnce++)
    interrupts.settle(ExitCode.partialFailure)
    process.emit('SIGINT', 'SIGINT')
    process.emit('SIGTERM', 'SIGTERM')
    process.emit('SIGINT', 'SIGINT')
    expect(stoppedAtOnce).toBe(0)
    expect(exit.mock.calls.map(([code]) => code)).toEqual([
      ExitCode.partialFailure,
      ExitCode.partialFailure,
      ExitCode.partialFailure,
    ])
    // The command's own end (dispose after the output) changes nothing.
    interrupts.dispose()
    process.emit('SIGINT', 'SIGINT')
    expect(exit).toHaveBeenLastCalledWith(ExitCode.partialFailure)
  })

  it('never leaves a signal without a listener, at start or at dispose: Node would restore death by the signal', () => {
    exits()
    // What bin/run.js installs before oclif loads, released when the command starts.
    const early = () => undefined
    process.removeAllListeners('SIGINT')
    process.removeAllListeners('SIGTERM')
    process.on('SIGINT', early)
    process.on('SIGTERM', early)
    const global = globalThis as {airlockReleaseEarlySignals?: () => void}
    global.airlockReleaseEarlySignals = () => {
      process.off('SIGINT', early)
      process.off('SIGTERM', early)
    }
    // Each removal is recorded with how many listeners its signal had at that moment.
    const removals: Array<{signal: string; before: number}> = []
    const off = process.off.bind(process)
    vi.spyOn(process, 'off').mockImplementation(((signal: string, listener: () => void) => {
      removals.push({signal, before: process.listenerCount(signal)})
      return off(signal, listener)
    }) as never)
    try {
      const interrupts = new Interrupts(() => undefined)
      interrupts.settle(ExitCode.ok)
    } finally {
      delete global.airlockReleaseEarlySignals
    }
    expect(removals).toHaveLength(4)
    for (const removal of removals) expect(removal.before).toBeGreaterThan(1)
    expect(process.listenerCount('SIGINT')).toBe(1)
    expect(process.listenerCount('SIGTERM')).toBe(1)
  })
})
