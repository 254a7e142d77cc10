import {describe, expect, it} from 'vitest'

import {applicationNameMaxBytes, parseSessionTag, sessionTag} from '../../src/protocol/sessionTag.js'

const id = '0196f0e2-7d1c-7b3a-9c4e-2f1a5b6c7d8e'

describe('sessionTag', () => {
  it('names a task instance by its id within the 63 bytes PostgreSQL keeps, for every writer verb', () => {
    for (const verb of ['complete', 'replay']) {
      const tag = sessionTag(verb, id)
      expect(Buffer.byteLength(tag)).toBeLessThanOrEqual(applicationNameMaxBytes)
      expect(parseSessionTag(tag)).toEqual({verb, tiId: id, waitedMs: 0})
      expect(parseSessionTag(tag.toUpperCase().replace('AIRLOCK', 'airlock'))?.tiId).toBe(id)
    }
  })

  it('a key is no task instance tag: audit-locks never takes it (or its cut) for one', () => {
    const key = sessionTag('complete', 'etl/scheduled__2026-12-02T03:00:00+00:00/extract_customers[3]')
    expect(parseSessionTag(key)).toBeNull()
    expect(parseSessionTag(key.slice(0, 63))).toBeNull()
    expect(parseSessionTag(`airlock:replay:event:${id}`)).toBeNull()
    expect(parseSessionTag('airlock:complete')).toBeNull()
  })

  it('carries how long the item waited for the row in earlier transactions, and drops it, never the id, past 63 bytes', () => {
    const tag = sessionTag('complete', id, 2345.7)
    expect(tag).toBe(`airlock:complete:${id}:w2345`)
    expect(parseSessionTag(tag)).toEqual({verb: 'complete', tiId: id, waitedMs: 2345})
    expect(Buffer.byteLength(sessionTag('complete', id, 99_999_999))).toBe(applicationNameMaxBytes)
    expect(sessionTag('complete', id, 100_000_000_000)).toBe(`airlock:complete:${id}`)
    expect(sessionTag('complete', id, 0)).toBe(`airlock:complete:${id}`)
    expect(sessionTag('complete', 'etl/r/t', 500)).toBe('airlock:complete:etl/r/t')
  })
})
