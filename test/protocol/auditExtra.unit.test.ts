import {describe, expect, it} from 'vitest'

import {extraAroundEventIds} from '../../src/protocol/auditIdentity.js'

describe('an audit extra with room for its event ids', () => {
  it('joined around the ids is the text JSON.stringify writes with the ids in place', () => {
    const build = (ids: unknown) => ({host_name: 'h', airlock: {events: 3, event_ids: ids, after: {x: [1, 2]}}})
    const {before, after} = extraAroundEventIds(build)
    // What the statement writes between the two halves: array_to_json of the ids, compact.
    expect(before + '[7,8,9]' + after).toBe(JSON.stringify(build([7, 8, 9])))
    expect(before + '[]' + after).toBe(JSON.stringify(build([])))
  })

  it('no other value of the extra is taken for the ids, not even one that looks like a stand-in', () => {
    const build = (ids: unknown) => ({owner: 'event_ids 00000000-0000-0000-0000-000000000000', event_ids: ids})
    const {before, after} = extraAroundEventIds(build)
    expect(before + '[1]' + after).toBe(JSON.stringify(build([1])))
  })

  it('refuses an extra that leaves no room for the ids, or names them twice', () => {
    expect(() => extraAroundEventIds(() => ({airlock: {}}))).toThrow(/exactly once/)
    expect(() => extraAroundEventIds((ids) => ({a: ids, b: ids}))).toThrow(/exactly once/)
  })
})
