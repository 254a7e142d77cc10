import {createHash} from 'node:crypto'

/**
 * An instant with the microseconds PostgreSQL keeps (a JavaScript Date keeps milliseconds only,
 * and the run id hashes Python's `isoformat()` of the microsecond instant).
 */
export interface MicroInstant {
  /** Microseconds since 1970-01-01T00:00:00Z. */
  epochMicros: bigint
}

/**
 * OpenLineage's `generate_static_uuid(instant, data)` (openlineage-python,
 * client/python/src/openlineage/client/uuid.py), bit for bit: a UUIDv7 whose first 48 bits are
 * `int(instant_utc.timestamp() * 1000)` and whose other bits are the first 76 bits of
 * SHA-1(`instant_utc.isoformat()` + data), version 7 and the RFC 4122 variant set over them.
 * Airflow's OpenLineage provider names a task instance's run and its dag run with it
 * (`OpenLineageAdapter.build_task_instance_run_id`, `build_dag_run_id`).
 */
export function generateStaticUuid(instant: MicroInstant, data: string): string {
  // timestamp() is (the instant - epoch).total_seconds(): microseconds / 10**6 as a double, then
  // * 1000 and int(): the same IEEE operations here, so the same rounding.
  const micros = Number(instant.epochMicros)
  const timestampMs = BigInt(Math.trunc((micros / 1e6) * 1000))
  const digest = createHash('sha1')
    .update(Buffer.concat([Buffer.from(pythonIsoformat(instant), 'utf8'), Buffer.from(data, 'utf8')]))
    .digest()
  const node = BigInt(`0x${digest.toString('hex')}`) >> 84n
  let value = (timestampMs & 0xffffffffffffn) << 80n
  value |= node & 0xffffffffffffffffffffn
  value &= ~(0xf000n << 64n)
  value |= 7n << 76n
  value &= ~(0xc000n << 48n)
  value |= 0x8000n << 48n
  const hex = value.toString(16).padStart(32, '0')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/**
 * Python's `datetime.isoformat()` of a UTC-aware instant: `YYYY-MM-DDTHH:MM:SS+00:00`, with
 * `.ffffff` between only when the microseconds are not zero.
 */
export function pythonIsoformat(instant: MicroInstant): string {
  const micros = instant.epochMicros
  const fraction = Number(((micros % 1_000_000n) + 1_000_000n) % 1_000_000n)
  const date = new Date(Number((micros - BigInt(fraction)) / 1000n))
  const pad = (n: number, width = 2) => String(n).padStart(width, '0')
  const seconds = `${pad(date.getUTCFullYear(), 4)}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}T${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}`
  return `${seconds}${fraction === 0 ? '' : `.${pad(fraction, 6)}`}+00:00`
}
