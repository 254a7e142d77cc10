import {describe, expect, it} from 'vitest'

import {completeOutcomes, type CompleteOutcome} from '../../src/complete/completeWriter.js'
import {backoffDelay, defaultRetryPolicy} from '../../src/engine/retry.js'
import type {ItemResult, ProtocolOutcome} from '../../src/protocol/outcomes.js'
import {Tally} from '../../src/batch/tally.js'

const item = (result: ProtocolOutcome<CompleteOutcome>, warnings: string[] = []): ItemResult<CompleteOutcome> => ({
  ref: {tiId: 'x'},
  ti: null,
  result,
  events: result.outcome === 'completed' ? 2 : 0,
  queued: result.outcome === 'completed' ? 1 : 0,
  timings: {registerMs: 0, lockWaitMs: 0, lockHoldMs: 0, stampToCommitMs: null, totalMs: 0},
  attempts: 1,
  dryRun: false,
  warnings,
})

describe('Tally', () => {
  it('counts outcomes, events and queue rows into the run summary', () => {
    const tally = new Tally(completeOutcomes)
    tally.add(item({outcome: 'completed'}))
    tally.add(item({outcome: 'already_success'}))
    expect(tally.summary(true)).toEqual({
      selected: 2,
      completed: 1,
      already_success: 1,
      conflict: 0,
      inactive_outlet: 0,
      unsupported_consumer: 0,
      invalid_end_date: 0,
      mapped_downstream: 0,
      downstream_changed: 0,
      unsupported_downstream: 0,
      not_found: 0,
      failed: 0,
      events_created: 2,
      runs_queued: 1,
      dry_run: true,
    })
    expect(tally.exit()).toBe(0)
  })

  it('exit code: the highest of 5, 4, 3 wins', () => {
    const tally = new Tally(completeOutcomes)
    tally.add(item({outcome: 'conflict', previousState: 'failed'}))
    expect(tally.exit()).toBe(3)
    tally.add(item({outcome: 'not_found'}))
    expect(tally.exit()).toBe(4)
    // Found by a filter and gone before its transaction: not "named explicitly".
    expect(tally.exit({explicit: false})).toBe(3)
    tally.add(item({outcome: 'failed', sqlstate: '55P03', message: 'x'}))
    expect(tally.exit()).toBe(5)
  })

  it('folds repeated warnings into one line with a count', () => {
    const tally = new Tally(completeOutcomes)
    for (let i = 0; i < 3; i++) tally.add(item({outcome: 'completed'}, ['asset a is not active']))
    tally.add(item({outcome: 'completed'}, ['asset b is not active']))
    expect(tally.warnings()).toEqual(['asset a is not active (3 task instances)', 'asset b is not active'])
  })
})

describe('backoff', () => {
  it('grows exponentially with jitter and stays under the cap', () => {
    expect(backoffDelay(defaultRetryPolicy, 1, () => 0)).toBe(13)
    expect(backoffDelay(defaultRetryPolicy, 1, () => 1)).toBe(25)
    expect(backoffDelay(defaultRetryPolicy, 3, () => 1)).toBe(100)
    expect(backoffDelay(defaultRetryPolicy, 20, () => 1)).toBe(defaultRetryPolicy.maxDelayMs)
  })
})
