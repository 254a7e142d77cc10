import {describe, expect, it} from 'vitest'

import {generateStaticUuid, pythonIsoformat} from '../../src/lineage/staticUuid.js'

/**
 * Vectors computed with openlineage-python's `generate_static_uuid` algorithm
 * (client/python/src/openlineage/client/uuid.py) run by CPython 3 on the datetimes shown:
 * whole seconds, microsecond instants (isoformat adds `.ffffff` only when they are not zero), the
 * last microsecond of a leap day, a millisecond instant, and non-ASCII data (UTF-8).
 */
const vectors: Array<[iso: string, epochMicros: bigint, data: string, uuid: string]> = [
  ['2025-01-01T00:00:00+00:00', 1735689600000000n, 'default.etl.produce.1.-1', '01941f29-7c00-7c55-aabb-f7cdfa8e1f5c'],
  [
    '2025-03-14T15:09:26.535897+00:00',
    1741964966535897n,
    'default.etl.produce.2.3',
    '01959533-fa87-727d-aefa-0ef9b61646aa',
  ],
  [
    '2024-02-29T23:59:59.999999+00:00',
    1709251199999999n,
    'prod.report_daily.load.1.-1',
    '018df74f-83ff-7c62-8d14-70cbbd36fa8e',
  ],
  ['2026-12-04T01:02:03.001000+00:00', 1796346123001000n, 'default.etl.0', '01a23e92-92f9-7598-8630-2ae45f66970d'],
  ['2023-07-01T00:00:00.000001+00:00', 1688169600000001n, 'ns.dagé.täsk.1.-1', '01890ebf-d400-7239-ad73-9151d9920e23'],
]

describe('generateStaticUuid, as openlineage-python computes it', () => {
  it.each(vectors)('%s, %s', (iso, epochMicros, data, uuid) => {
    expect(pythonIsoformat({epochMicros})).toBe(iso)
    expect(generateStaticUuid({epochMicros}, data)).toBe(uuid)
  })

  it('is a UUIDv7 whose first 48 bits are the instant in milliseconds', () => {
    const id = generateStaticUuid({epochMicros: 1741964966535897n}, 'x')
    expect(id[14]).toBe('7')
    expect(['8', '9', 'a', 'b']).toContain(id[19])
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(1741964966535)
  })
})
