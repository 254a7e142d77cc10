import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {readFindingsFile} from '../../src/selection/findingsFile.js'

const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-findings-'))
afterAll(() => fs.rm(dir, {recursive: true, force: true}))

const file = async (name: string, lines: object[]) => {
  const target = path.join(dir, name)
  await fs.writeFile(target, lines.map((line) => JSON.stringify(line)).join('\n') + '\n')
  return target
}

const ti = (n: number) => `0190b4d2-7a4c-7cc1-9e0a-5b8a3f2d4e6${n}`
const auditSummary = {type: 'summary', counts: {missing_events: 1, duplicate: 1}, fix: null}

describe('an audit findings file, as replay-events --from-file reads it', () => {
  it('takes the missing findings, once each, counts the other classes, and knows it is whole', async () => {
    const findings = await readFindingsFile(
      await file('audit.ndjson', [
        {type: 'finding', class: 'missing_events', ti_id: ti(1)},
        {type: 'finding', class: 'missing_events', ti_id: ti(1)},
        {type: 'finding', class: 'missing_unknown', ti_id: ti(2)},
        {type: 'finding', class: 'duplicate', event_id: 7, ti_id: null},
        auditSummary,
      ]),
    )
    expect(findings).toEqual({tiIds: [ti(1), ti(2)], skipped: {duplicate: 1}, unknown: 1, complete: true})
  })

  it('a file without the summary line is taken, and said to be possibly cut short', async () => {
    const findings = await readFindingsFile(
      await file('cut.ndjson', [{type: 'finding', class: 'missing_events', ti_id: ti(1)}]),
    )
    expect(findings?.complete).toBe(false)
  })

  it("an export's events, or another command's summary line, are not findings", async () => {
    const exported = await file('export.ndjson', [{id: 1, asset: {name: 'a', uri: 'a'}, extra: {}}])
    expect(await readFindingsFile(exported)).toBeUndefined()
    // complete --output of a run that selected nothing: a summary line, but not the audit's.
    const emptyRun = await file('empty-run.ndjson', [{type: 'summary', selected: 0, completed: 0, dry_run: false}])
    expect(await readFindingsFile(emptyRun)).toBeUndefined()
  })

  it('a file that starts as findings and then holds something else is refused, naming the line', async () => {
    const mixed = await file('mixed.ndjson', [
      {type: 'finding', class: 'missing_events', ti_id: ti(1)},
      {id: 1, asset: {name: 'a', uri: 'a'}, extra: {}},
    ])
    await expect(readFindingsFile(mixed)).rejects.toThrow(/line 2 is not an audit finding/)
    const badId = await file('bad-id.ndjson', [{type: 'finding', class: 'missing_events', ti_id: 'nope'}])
    await expect(readFindingsFile(badId)).rejects.toThrow(/carries the task instance's "ti_id"/)
  })
})
