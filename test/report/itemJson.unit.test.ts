import {describe, expect, it} from 'vitest'

import type {ItemResult} from '../../src/protocol/outcomes.js'
import {toItemJson} from '../../src/report/itemJson.js'

/** A failed item as the protocol reports one whose every attempt failed before reading its task instance. */
function failedBeforeItsRead(ref: ItemResult<{outcome: string}>['ref']): ItemResult<{outcome: string}> {
  return {
    ref,
    ti: null,
    result: {outcome: 'failed', sqlstate: '08006', message: 'connect ECONNREFUSED 127.0.0.1:5432'} as {outcome: string},
    events: 0,
    queued: 0,
    timings: {registerMs: 0, lockWaitMs: 0, lockHoldMs: 0, stampToCommitMs: null, totalMs: 3},
    attempts: 4,
    dryRun: false,
    warnings: [],
  }
}

describe('an item that failed before it could read its task instance', () => {
  it('is named by the key its selection saw, not ?/?/<uuid>', () => {
    const json = toItemJson(
      failedBeforeItsRead({
        tiId: '0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a',
        seen: {dagId: 'etl_002', runId: 'scheduled__2026-12-01T00:00:00+00:00', taskId: 'load', mapIndex: 3},
      }),
    )
    expect(json).toMatchObject({
      ti_id: '0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a',
      dag_id: 'etl_002',
      run_id: 'scheduled__2026-12-01T00:00:00+00:00',
      task_id: 'load',
      map_index: 3,
      outcome: 'failed',
    })
  })

  it('an id nobody saw a key for (named on the command line) stays unnamed rather than guessed', () => {
    const json = toItemJson(failedBeforeItsRead({tiId: '0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a'}))
    expect(json).toMatchObject({dag_id: null, run_id: null, task_id: null, map_index: null})
  })
})
