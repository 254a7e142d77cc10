import {readFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {describe, expect, it} from 'vitest'

import {postgresStore} from '../../src/store/postgres/postgresStore.js'
import {lineCapabilities} from '../store/statementFiles.js'

/**
 * docs/architecture.md lists every store method, one table row each: a method added to the store
 * without a row (or a row left for a method that is gone) fails here.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

function documentedMethods(): string[] {
  const text = readFileSync(path.join(root, 'docs', 'architecture.md'), 'utf8')
  const section = text.slice(text.indexOf('## Store methods'))
  const end = section.indexOf('\n## ', 3)
  const rows = (end === -1 ? section : section.slice(0, end)).split('\n').filter((line) => line.startsWith('| `'))
  return rows.flatMap((row) => [...row.split('|')[1]!.matchAll(/`(\w+)\(/g)].map((match) => match[1]!)).sort()
}

describe('docs/architecture.md store methods', () => {
  it('has one row for every method of the store, and none for a method it does not have', () => {
    const store = postgresStore(lineCapabilities['3.4'])
    const methods = Object.entries(store)
      .filter(([, value]) => typeof value === 'function')
      .map(([name]) => name)
      .sort()
    expect(documentedMethods()).toEqual(methods)
  })
})
