import {describe, expect, it} from 'vitest'

import {declaredAllowance, declaredEventCount} from '../../src/airflow/declaredEvents.js'

const asset = {name: 'out', uri: 's3://lake/out'}
const dag = (outlets: unknown[]) => ({dag: {tasks: [{__type: 'operator', __var: {task_id: 't', outlets}}]}})
const direct = {__type: 'asset', __var: {name: 'out', uri: 's3://lake/out', group: 'asset', extra: {}}}
const byName = {__type: 'asset_ref', __var: {name: 'out'}}
const byUri = {__type: 'asset_ref', __var: {uri: 's3://lake/out'}}

describe("how many events a try's declared outlets call for on one asset (register_asset_changes_in_db)", () => {
  it('one per declaration kind: the asset, a ref by name, a ref by uri; a repeated one counts once', () => {
    expect(declaredEventCount([{kind: 'asset', ...asset}], asset)).toBe(1)
    expect(
      declaredEventCount(
        [
          {kind: 'asset', ...asset},
          {kind: 'asset', ...asset},
        ],
        asset,
      ),
    ).toBe(1)
    expect(
      declaredEventCount(
        [
          {kind: 'asset', ...asset},
          {kind: 'name_ref', name: 'out'},
        ],
        asset,
      ),
    ).toBe(2)
    expect(
      declaredEventCount(
        [
          {kind: 'asset', ...asset},
          {kind: 'name_ref', name: 'out'},
          {kind: 'uri_ref', uri: asset.uri},
        ],
        asset,
      ),
    ).toBe(3)
    expect(declaredEventCount([{kind: 'name_ref', name: 'other'}], asset)).toBe(0)
  })

  it("from the serialized DAG of the try's one DAG version", () => {
    expect(declaredAllowance([{id: 'v1', serialized: dag([direct, byName, byUri])}], 't', asset)).toEqual({
      known: true,
      count: 3,
    })
  })

  it('the database cannot tell: no version, two versions, no serialized DAG, no task, the asset not declared', () => {
    const unknown = (versions: Array<{id: string; serialized: unknown}>, taskId = 't') =>
      declaredAllowance(versions, taskId, asset).known
    expect(unknown([])).toBe(false)
    expect(
      unknown([
        {id: 'v1', serialized: dag([direct])},
        {id: 'v2', serialized: dag([direct])},
      ]),
    ).toBe(false)
    expect(unknown([{id: 'v1', serialized: undefined}])).toBe(false)
    expect(unknown([{id: 'v1', serialized: dag([direct])}], 'other')).toBe(false)
    expect(unknown([{id: 'v1', serialized: dag([])}])).toBe(false)
  })
})
