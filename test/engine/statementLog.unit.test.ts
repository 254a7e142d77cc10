import {describe, expect, it} from 'vitest'

import {prepared, statement} from '../../src/engine/prepared.js'
import {logRoundTrip, statementLabel} from '../../src/engine/statementLog.js'

describe('statementLabel', () => {
  it('a prepared statement is called by its name', () => {
    const lock = prepared('lock_ti', 'select state from task_instance where id = $1 for update')
    expect(statementLabel(lock(['00000000-0000-4000-8000-000000000000']))).toMatch(/^airlock_lock_ti_[0-9a-f]{12}$/)
  })

  it('an ad-hoc statement by its first 60 characters, whitespace collapsed, literals blanked, never its values', () => {
    const label = statementLabel(
      statement(
        `select id
           from connection
          where conn_id = 'db_password=hunter2' and login = $1
            and note = 'it''s'`,
        ['s3cret-value'],
      ),
    )
    expect(label).toBe(`"select id from connection where conn_id = '…' and login = $…"`)
    expect(label).not.toContain('hunter2')
    expect(label).not.toContain('s3cret-value')
    expect(statementLabel(statement("select 1 where note = 'it''s' and x = $1"))).toBe(
      `"select 1 where note = '…' and x = $1"`,
    )
  })
})

describe('logRoundTrip', () => {
  it('logs the duration and detail, or the error code alone (never the message, which can quote a value), and rethrows', async () => {
    const lines: string[] = []
    await logRoundTrip(
      (line) => lines.push(line),
      'sql "select 1"',
      () => Promise.resolve(1),
      (n) => `(${n} row)`,
    )
    const failure = Object.assign(
      new Error('duplicate key value violates unique constraint: Key (uri)=(s3://secret-bucket)'),
      {code: '23505'},
    )
    await expect(
      logRoundTrip(
        (line) => lines.push(line),
        'sql airlock_insert_events_ab12cd34ef56',
        () => Promise.reject(failure),
      ),
    ).rejects.toBe(failure)
    expect(lines[0]).toMatch(/^sql "select 1" \d+\.\d ms \(1 row\)$/)
    expect(lines[1]).toMatch(/^sql airlock_insert_events_ab12cd34ef56 \d+\.\d ms failed \(23505\)$/)
  })
})
