import {describe, expect, it} from 'vitest'

import type {Finding} from '../../src/audit/auditEvents.js'
import {Tally} from '../../src/batch/tally.js'
import {BatchOutput} from '../../src/cli/batchOutput.js'
import {renderEventAudit, type EventAuditReport} from '../../src/cli/renderEventAudit.js'
import {renderBatch, renderBreakdown, renderDownstream, renderEventItems} from '../../src/cli/renderItems.js'
import type {ItemJson} from '../../src/report/itemJson.js'

/** The identifying part of every row stays readable at a terminal's width (the trial's 80 and 120 columns). */
const dag = 'dotodo_daily_analytics_rollup'
const run = 'scheduled__2024-06-01T00:30:00+00:00'

const item = (task: string, mapIndex: number): ItemJson => ({
  ti_id: '0190b4d2-7a4c-7cc1-9e0a-5b8a3f2d4e61',
  dag_id: dag,
  run_id: run,
  task_id: task,
  map_index: mapIndex,
  outcome: 'completed',
  previous_state: 'running',
  events: 2,
  queued: 1,
  timings: {register_ms: 1.2, lock_wait_ms: 0.1, lock_hold_ms: 1.92, stamp_to_commit_ms: 0.4, total_ms: 14.3},
})

const lines = (text: string) => text.split('\n')

describe('tables keep the task id and map index visible', () => {
  for (const width of [80, 120]) {
    it(`the items table at ${width} columns`, () => {
      const text = renderBatch(
        {
          summary: {dry_run: false, selected: 2, completed: 2, events_created: 4, runs_queued: 2},
          items: [item('an_task_7', 3), item('an_task_12', 11)],
        },
        'task instance',
        width,
      )
      for (const line of lines(text)) expect(line.length, line).toBeLessThanOrEqual(width)
      expect(text).toContain('an_task_7[3]')
      expect(text).toContain('an_task_12[11]')
      expect(text).toContain(dag.slice(0, 7))
      // The run's date too: rows of two runs never read alike.
      expect(text).toContain('2024-06-01')
      expect(text).toContain('completed (was running)')
    })

    it(`the findings table at ${width} columns`, () => {
      const finding: Finding = {
        class: 'missing_events',
        event_id: null,
        ti_id: '0190b4d2-7a4c-7cc1-9e0a-5b8a3f2d4e61',
        asset: null,
        source_dag_id: dag,
        source_run_id: run,
        source_task_id: 'an_task_7',
        source_map_index: 3,
        timestamp: null,
        kept_id: null,
        consumed: null,
        evidence: 'an active declared outlet has no event of its last try; the worker logged its success',
        suggestion: 'airlock replay-events --ti-id 0190b4d2-7a4c-7cc1-9e0a-5b8a3f2d4e61',
      }
      const counts = {missing_events: 1, missing_unknown: 0} as EventAuditReport['counts']
      const text = renderEventAudit({counts, findings: [finding], omitted: 0, fix: null}, width)
      const table = lines(text).filter((line) => line.startsWith('missing_events '))
      expect(table.length).toBeGreaterThan(0)
      for (const line of table) expect(line.length, line).toBeLessThanOrEqual(width)
      expect(table.some((line) => line.includes('an_task_7[3]'))).toBe(true)
      // One command for every finding, not one per finding.
      expect(text).toContain('replay-events --from-file findings.ndjson --dry-run')
    })
  }

  it("the event items table names each event's source task instance, at 80 and 120 columns", () => {
    const event = (id: number, task: string | null, mapIndex: number | null) => ({
      source: `event ${id}`,
      asset: 'warehouse.daily_rollup',
      source_dag_id: task ? dag : null,
      source_run_id: task ? run : null,
      source_task_id: task,
      source_map_index: mapIndex,
      outcome: 'replayed',
      new_event_id: id + 1000,
      existing_event_id: null,
      queued: 1,
    })
    for (const width of [80, 120]) {
      const text = renderEventItems(
        [event(41, 'an_task_7', 3), event(42, 'an_task_12', -1), event(43, null, null)],
        width,
      )
      for (const line of lines(text)) expect(line.length, line).toBeLessThanOrEqual(width)
      expect(lines(text)[0]).toMatch(/^from +task instance +asset/)
      expect(text).toContain('an_task_7[3]')
      expect(text).toContain('an_task_12 ')
      // Where there is room, the run's date too (at 80 columns the asset shares it).
      if (width >= 120) expect(text).toContain('2024-06-01')
      // An event without a source task (an external producer) says so with a dash.
      expect(lines(text).find((line) => line.startsWith('event 43'))).toMatch(/^event 43 +- +wareho/)
    }
  })

  it('a truncated breakdown counts the task instances really left, not the sum of the runs it counted', () => {
    const runs = Array.from({length: 30}, (_, i) => ({
      dag_id: 'etl',
      run_id: `scheduled__2026-11-${String(i + 1).padStart(2, '0')}`,
      task_instances: 10,
      states: {running: 10},
    }))
    const text = renderBreakdown({runs, dags: 1, truncated: true}, 8_964, 120)
    // 20 runs of 10 listed: 8,764 remain, in at least the 10 more runs the breakdown counted.
    expect(text).toContain('… and 8,764 more task instances in at least 10 more runs')
    expect(text).toContain('Selected 8,964 task instances in more than 30 runs')
  })
})

describe('a plan says what it plans and marks what it cannot measure', () => {
  const planned = (downstream: boolean) =>
    renderBatch({
      summary: {dry_run: true, selected: 2, completed: 2, events_created: 4, runs_queued: 3},
      items: [item('an_task_7', -1), item('an_task_12', -1)].map((i) => ({
        ...i,
        outcome: 'would_complete',
        timings: {...i.timings, lock_hold_ms: 0},
      })),
      plan: 'a plan reads, it writes nothing',
      ...(downstream
        ? {
            downstream: [
              {
                dag_id: 'report',
                ready: true,
                waiting_for: [],
                waiting_for_count: 0,
                satisfied: ['a'],
                satisfied_count: 1,
                assets: 1,
                items: 2,
              },
            ],
          }
        : {}),
    })

  it('the planned queue rows in the summary, and no lock hold where no lock is taken', () => {
    const text = planned(true)
    expect(text).toContain('4 events, 3 queue rows planned (what they make ready: Downstream, below).')
    const row = lines(text).find((line) => line.includes('an_task_7'))!
    expect(row).toContain('—')
    expect(row).not.toContain('0.00')
  })

  it('without a downstream preview the summary points nowhere', () => {
    expect(planned(false)).toContain('4 events, 3 queue rows planned.')
  })
})

describe('the OpenLineage line of a batch', () => {
  it('names the first failure by its task instance and says why, without repeating "failed"', () => {
    const output = new BatchOutput<ItemJson>('json', 'complete', 3, ['completed'], () => undefined)
    const tally = new Tally({completed: 0})
    const lineageOf = (task: string, mapIndex: number, lineage: string) => {
      const json = {...item(task, mapIndex), lineage}
      tally.add({result: {outcome: 'completed'}, events: 2, queued: 1, warnings: []})
      output.add(json, tally)
    }
    lineageOf('an_task_1', -1, 'sent')
    lineageOf('an_task_7', 3, 'failed (ECONNREFUSED after 3 attempts)')
    lineageOf('an_task_9', -1, 'failed (HTTP 400)')
    const report = output.finish(tally, false, false)
    expect(report.lineage).toEqual({sent: 1, failed: 2})
    expect(report.lineage_first_failure).toBe(`${dag}/${run}/an_task_7[3]: ECONNREFUSED after 3 attempts`)
    const text = renderBatch(report)
    expect(text).toContain(
      `OpenLineage COMPLETE events: 1 sent, 2 failed (first failure: ${dag}/${run}/an_task_7[3]: ECONNREFUSED after 3 attempts; the completions stand).`,
    )
    expect(text).not.toMatch(/failure: failed/)
  })
})

describe('the downstream section', () => {
  it('a consumer of thousands of assets: the first assets it waits for, how many more, and the counts', () => {
    const text = renderDownstream(
      [
        {
          dag_id: 'wide',
          ready: false,
          waiting_for: ['asset_0', 'asset_1'],
          waiting_for_count: 1100,
          satisfied: ['asset_100'],
          satisfied_count: 3900,
          assets: 5000,
          items: 3,
        },
      ],
      false,
    )
    expect(text).toContain('wide: waits for asset_0, asset_1 and 1098 more (3900 of 5000 assets)')
  })
})
