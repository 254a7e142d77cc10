import {describe, expect, it} from 'vitest'

import {rollupFingerprint, sameFingerprint} from '../../src/airflow/rollupFingerprint.js'

const identity = {__type: 'airflow.partition_mappers.identity.IdentityMapper', __var: {}}
const day = {
  __type: 'airflow.partition_mappers.temporal.StartOfDayMapper',
  __var: {timezone: 'UTC', input_format: '%Y-%m-%dT%H:%M:%S', output_format: '%Y-%m-%d'},
}
const asset = (name: string, uri: string) => ({__type: 'asset', name, uri, group: 'asset', extra: {}})
const timetable = (condition: unknown, config: unknown[] = [], fallback: unknown = identity) => ({
  __type: 'airflow.timetables.simple.PartitionedAssetTimetable',
  __var: {asset_condition: condition, partition_mapper_config: config, default_partition_mapper: fallback},
})

describe('the rollup fingerprint 3.3 compares pending partition runs with', () => {
  it('maps every asset of the condition to the default mapper, as "name|uri"', () => {
    const condition = {__type: 'asset_all', objects: [asset('a', 's3://x/a'), asset('b', 's3://x/b')]}
    expect(rollupFingerprint(timetable(condition, [], day))).toEqual({'a|s3://x/a': day, 'b|s3://x/b': day})
  })

  it('takes a configured mapper by the asset name, and a uri reference by its uri', () => {
    const condition = {
      __type: 'asset_any',
      objects: [asset('a', 's3://x/a'), {__type: 'asset_ref', uri: 's3://x/c'}, {__type: 'asset_ref', name: 'd'}],
    }
    const config = [
      [asset('a', 's3://x/a'), day],
      [{__type: 'asset_ref', uri: 's3://x/c'}, day],
    ]
    expect(rollupFingerprint(timetable(condition, config))).toEqual({
      'a|s3://x/a': day,
      '|s3://x/c': day,
      'd|': identity,
    })
  })

  it('looks an asset up by name only: a mapper configured for its uri alone does not apply', () => {
    // get_partition_mapper returns the default when the name misses, without trying the uri.
    const config = [[{__type: 'asset_ref', uri: 's3://x/a'}, day]]
    expect(rollupFingerprint(timetable(asset('a', 's3://x/a'), config))).toEqual({'a|s3://x/a': identity})
  })

  it('leaves aliases out and has none for a timetable that is not partitioned', () => {
    const condition = {__type: 'asset_all', objects: [{__type: 'asset_alias', name: 'al'}, asset('a', 'u')]}
    expect(rollupFingerprint(timetable(condition))).toEqual({'a|u': identity})
    expect(rollupFingerprint({__type: 'airflow.timetables.simple.AssetTriggeredTimetable', __var: {}})).toBeUndefined()
  })

  it('compares fingerprints as JSON values, whatever their key order', () => {
    expect(sameFingerprint({a: {x: 1, y: [1, {b: 2, c: 3}]}}, {a: {y: [1, {c: 3, b: 2}], x: 1}})).toBe(true)
    expect(sameFingerprint({a: identity}, {a: day})).toBe(false)
    expect(sameFingerprint(null, {})).toBe(false)
  })
})
