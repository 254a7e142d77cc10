import {readFileSync, writeFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {describe, expect, it} from 'vitest'

import {fixtureVersions} from '../../src/worlds/fixtureSchema.js'
import {statementFile} from './statementFiles.js'

/**
 * The checked-in statement files show a reviewer the exact SQL each release line gets, and a diff
 * shows what a change does to it. `npm run statements` rewrites them; this fails when they are
 * stale.
 */
const folder = path.join(path.dirname(fileURLToPath(import.meta.url)), 'statements')
const write = process.env.AIRLOCK_WRITE_STATEMENTS === '1'

describe('statement files', () => {
  it.each(fixtureVersions)(
    'test/store/statements/%s.sql holds every statement the store prepares on that line',
    (line) => {
      const file = path.join(folder, `${line}.sql`)
      const expected = statementFile(line)
      if (write) writeFileSync(file, expected)
      expect(readFileSync(file, 'utf8'), `${line}.sql is stale: run npm run statements and commit the diff`).toBe(
        expected,
      )
    },
  )

  it('each file names the lock, the queue and the success update, and never a placeholder past its values', () => {
    for (const line of fixtureVersions) {
      const text = statementFile(line)
      expect(text).toContain('select state, try_number, xmin::text as xmin from task_instance where id = $1 for update')
      expect(text).toMatch(/insert into asset_dag_run_queue/)
      expect(text).toMatch(/update task_instance/)
    }
  })
})
