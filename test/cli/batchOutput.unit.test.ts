import {describe, expect, it} from 'vitest'

import {Tally} from '../../src/batch/tally.js'
import {BatchOutput} from '../../src/cli/batchOutput.js'
import {renderBatch, type BatchReport} from '../../src/cli/renderItems.js'
import {ExitCode} from '../../src/exitCodes.js'

const outcomes = {completed: ExitCode.ok, already_success: ExitCode.ok, failed: ExitCode.partialFailure}

/** A run of `selected` items stopped after `taken` of them (Ctrl-C, or a lost server). */
function stoppedAfter(selected: number, taken: number, interrupted: boolean) {
  const lines: string[] = []
  const output = new BatchOutput('json', 'complete', selected, ['completed'], (line) => lines.push(line))
  const tally = new Tally(outcomes)
  for (let i = 0; i < taken; i++) {
    const item = {
      result: {outcome: i % 10 === 0 ? 'already_success' : 'completed'} as const,
      events: 1,
      queued: 0,
      warnings: [],
    }
    tally.add(item)
  }
  return output.finish(tally, false, interrupted) as BatchReport
}

describe('the summary of a run stopped early', () => {
  it('counts what was selected, done and never reached', () => {
    const report = stoppedAfter(189, 179, true)
    expect(report.summary).toMatchObject({selected: 179, not_reached: 10})
    const text = renderBatch(report)
    expect(text).toContain('189 task instances selected, 179 done, 10 not reached: 161 completed, 18 already success')
  })

  it('a run that finished says only how many were selected', () => {
    const report = stoppedAfter(12, 12, false)
    expect(report.summary).not.toHaveProperty('not_reached')
    expect(renderBatch(report)).toContain('12 task instances selected: ')
  })
})
