import {describe, expect, it} from 'vitest'

import {buildForest, categorise} from '../../src/audit/lockForest.js'
import type {SessionRow} from '../../src/store/families/catalog.js'

const at = new Date('2026-12-02T03:00:10Z')
const session = (pid: number, blockedBy: number[], extra: Partial<SessionRow> = {}): SessionRow => ({
  pid,
  application_name: '',
  usename: 'airflow',
  state: blockedBy.length ? 'active' : 'idle in transaction',
  wait_event_type: blockedBy.length ? 'Lock' : null,
  wait_event: blockedBy.length ? 'transactionid' : null,
  xact_start: new Date('2026-12-02T03:00:00Z'),
  state_change: new Date('2026-12-02T03:00:05Z'),
  query: 'select 1',
  client_addr: '10.0.0.7',
  backend_start: new Date('2026-12-02T02:00:00Z'),
  backend_xid: null,
  blocked_by: blockedBy,
  sampled_at: at,
  wait_start: blockedBy.length ? new Date('2026-12-02T03:00:07Z') : null,
  waiting_on: blockedBy.length
    ? {locktype: 'transactionid', relation: null, page: null, tuple: null, mode: 'ShareLock'}
    : null,
  held_tuples: [],
  row_locked_tables: [],
  ...extra,
})

describe('buildForest', () => {
  it('walks chains to their root and counts each session once, even with several blockers', () => {
    const forest = buildForest(
      [session(1, []), session(2, [1]), session(3, [2, 1]), session(4, []), session(5, [4])],
      new Map(),
    )
    expect(forest.map((t) => [t.pid, t.blocked_below])).toEqual([
      [1, 2],
      [4, 1],
    ])
    const three = forest[0]!.children[0]!.children[0]!
    expect(three).toMatchObject({pid: 3, depth: 2, also_blocked_by: [1], wait_ms: 3000, terminate: null})
    // Only a root gets the statement that would end it; where each session connects from is kept.
    expect(forest.map((t) => t.terminate)).toEqual(['select pg_terminate_backend(1)', 'select pg_terminate_backend(4)'])
    expect(forest[0]).toMatchObject({client_addr: '10.0.0.7', backend_start: '2026-12-02T02:00:00.000Z'})
  })

  it('a cycle (a deadlock before the detector breaks it) still becomes a tree', () => {
    const forest = buildForest([session(7, [8]), session(8, [7])], new Map())
    expect(forest).toHaveLength(1)
    expect(forest[0]!.blocked_below).toBe(1)
  })

  it('a blocker outside the visible sessions is shown as not visible', () => {
    const forest = buildForest([session(9, [99])], new Map())
    expect(forest[0]).toMatchObject({pid: 99, state: expect.stringContaining('not visible')})
  })

  it('classifies queue writes apart from task_instance waits', () => {
    expect(categorise(session(1, [2], {query: 'insert into asset_dag_run_queue (asset_id) values (1)'}))).toBe('queue')
    expect(categorise(session(1, [2], {query: 'select 1 from task_instance where id = $1 for update'}))).toBe(
      'task_instance',
    )
    expect(categorise(session(1, [2], {query: 'update variable set val = 1'}))).toBe('other')
    expect(categorise(session(1, []))).toBeNull()
  })

  it("adds the earlier slices of an airlock session's row-lock wait (from its tag) to the current slice's", () => {
    const id = '0196f0e2-7d1c-7b3a-9c4e-2f1a5b6c7d8e'
    const waiting = {query: 'select state from task_instance where id = $1 for update'}
    const forest = buildForest(
      [
        session(1, []),
        session(2, [1], {...waiting, application_name: `airlock:complete:${id}:w2800`}),
        // A queue wait of the same item's next registration is its own wait: the tag's is for the row.
        session(3, [1], {
          query: 'insert into asset_dag_run_queue (asset_id) values (1)',
          application_name: `airlock:complete:${id}:w2800`,
        }),
        session(4, [1], {...waiting, application_name: `airlock:complete:${id}`}),
      ],
      new Map(),
    )
    const [row, queue, first] = forest[0]!.children
    expect(row).toMatchObject({pid: 2, wait_ms: 5800, waited_before_ms: 2800, task_instance: {id, guess: false}})
    expect(queue).toMatchObject({pid: 3, wait_ms: 3000, waited_before_ms: null})
    expect(first).toMatchObject({pid: 4, wait_ms: 3000, waited_before_ms: null})
  })
})
