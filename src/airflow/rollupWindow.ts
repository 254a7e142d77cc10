/**
 * Whether a rollup asset has received enough upstream keys for one pending partition run, as 3.3's
 * scheduler decides it (`SchedulerJobRunner._resolve_asset_partition_status`,
 * airflow/jobs/scheduler_job_runner.py, 3.3.2): the asset's partition mapper, when it is a
 * `RollupMapper` (airflow/partition_mappers/base.py), names the upstream keys the downstream key
 * needs (`RollupMapper.to_upstream`: the upstream mapper's `decode_downstream`, the window's
 * `to_upstream`, each member through `encode_upstream`), and its wait policy
 * (airflow/partition_mappers/wait_policy.py) decides from the keys received among them. A mapper
 * that raises is "not yet satisfied" there.
 *
 * airlock computes the keys for the built-in windows (airflow/partition_mappers/window.py) when
 * the upstream mapper is one it can mirror exactly: a temporal mapper with base
 * `decode_downstream` (StartOfHour, StartOfDay, StartOfMonth, StartOfYear) in UTC whose formats use
 * only %Y %m %d %H %M %S %z %%, or, for a `SegmentWindow`, a mapper whose keys are strings as they
 * are (FixedKey, Identity, AllowedKey). Anything else is `uncountable`: the caller must not say the
 * partition will run.
 */
export type RollupStatus =
  | {kind: 'not_rollup'}
  | {
      kind: 'counted'
      expected: number
      /** Received keys among the expected ones. */
      matched: number
      /** Matched keys the wait policy needs (Infinity: unreachable, MinimumCount above the window). */
      needs: number
      satisfied: boolean
      /** The first expected keys not received. */
      missing: string[]
    }
  | {kind: 'uncountable'; why: string}

const type = (encoded: unknown): string | undefined => (encoded as {__type?: string} | null)?.__type
const fields = (encoded: unknown): Record<string, unknown> =>
  ((encoded as {__var?: unknown} | null)?.__var ?? {}) as Record<string, unknown>

const rollupType = 'airflow.partition_mappers.base.RollupMapper'
const windows = 'airflow.partition_mappers.window.'
const temporal = 'airflow.partition_mappers.temporal.'

export function isRollup(mapper: unknown): boolean {
  return type(mapper) === rollupType
}

export function rollupStatus(mapper: unknown, downstreamKey: string, received: readonly string[]): RollupStatus {
  if (!isRollup(mapper)) return {kind: 'not_rollup'}
  const f = fields(mapper)
  const expected = expectedKeys(f.upstream_mapper, f.window, downstreamKey)
  if (typeof expected === 'string') return {kind: 'uncountable', why: expected}
  const policy = f.wait_policy
  const matchedKeys = new Set(received.filter((k) => expected.has(k)))
  const matched = matchedKeys.size
  let needs: number
  switch (type(policy)) {
    case 'airflow.partition_mappers.wait_policy.WaitForAll':
      needs = expected.size
      break
    case 'airflow.partition_mappers.wait_policy.MinimumCount': {
      const n = Number(fields(policy).n)
      if (!Number.isInteger(n) || n === 0) return {kind: 'uncountable', why: 'a MinimumCount airlock cannot read'}
      // n > 0: at least n (unreachable above the window's size); n < 0: at most -n missing.
      needs = n > 0 ? (n > expected.size ? Infinity : n) : Math.max(0, expected.size + n)
      break
    }
    default:
      return {kind: 'uncountable', why: `wait policy ${type(policy) ?? 'unknown'}`}
  }
  return {
    kind: 'counted',
    expected: expected.size,
    matched,
    needs,
    satisfied: matched >= needs,
    missing: [...expected].filter((k) => !matchedKeys.has(k)).slice(0, 5),
  }
}

/** RollupMapper.to_upstream, or why airlock cannot compute it. */
function expectedKeys(upstream: unknown, window: unknown, downstreamKey: string): Set<string> | string {
  const windowType = type(window)?.startsWith(windows) ? type(window)!.slice(windows.length) : undefined
  if (!windowType) return `window ${type(window) ?? 'unknown'}`
  const w = fields(window)
  if (windowType === 'SegmentWindow') {
    const plain = [
      'airflow.partition_mappers.fixed_key.FixedKeyMapper',
      'airflow.partition_mappers.identity.IdentityMapper',
      'airflow.partition_mappers.allowed_key.AllowedKeyMapper',
    ]
    if (!plain.includes(type(upstream) ?? '')) return `upstream mapper ${type(upstream) ?? 'unknown'}`
    return Array.isArray(w.segments) ? new Set(w.segments.map(String)) : 'a SegmentWindow without segments'
  }
  const mapperType = type(upstream)?.startsWith(temporal) ? type(upstream)!.slice(temporal.length) : undefined
  if (
    !mapperType ||
    !['StartOfHourMapper', 'StartOfDayMapper', 'StartOfMonthMapper', 'StartOfYearMapper'].includes(mapperType)
  )
    return `upstream mapper ${type(upstream) ?? 'unknown'}`
  const m = fields(upstream)
  if ((m.timezone ?? 'UTC') !== 'UTC') return `a mapper in timezone ${String(m.timezone)}`
  const input = m.input_format
  const output = m.output_format
  if (typeof input !== 'string' || typeof output !== 'string') return 'a temporal mapper without formats'
  // decode_downstream: strptime(downstream_key, output_format), a naive datetime.
  const anchor = parse(downstreamKey, output)
  if (typeof anchor === 'string') return anchor
  const members = windowMembers(windowType, w.direction === 'backward' ? 'backward' : 'forward', anchor)
  if (typeof members === 'string') return members
  const keys = new Set<string>()
  for (const member of members) {
    const key = format(member, input)
    if (key === undefined) return `input_format ${input}`
    keys.add(key)
  }
  return keys
}

/** Naive datetimes as UTC milliseconds. */
type Naive = number

const hour = 3_600_000
const day = 24 * hour

function windowMembers(kind: string, direction: 'forward' | 'backward', anchor: Naive): Naive[] | string {
  const steps = (count: number, step: (base: Naive, i: number) => Naive): Naive[] => {
    const base = direction === 'backward' ? step(anchor, -(count - 1)) : anchor
    return Array.from({length: count}, (_, i) => step(base, i))
  }
  const months = (base: Naive, i: number) => {
    const d = new Date(base)
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + i, 1, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds())
  }
  const dayOne = new Date(anchor).getUTCDate() === 1
  switch (kind) {
    case 'HourWindow':
      return steps(60, (b, i) => b + i * 60_000)
    case 'DayWindow':
      return steps(24, (b, i) => b + i * hour)
    case 'WeekWindow':
      return steps(7, (b, i) => b + i * day)
    case 'MonthWindow': {
      if (!dayOne) return 'a MonthWindow anchor not on day 1 (the scheduler treats it as not satisfied)'
      if (direction === 'backward') {
        const previous = months(anchor, -1)
        const count = Math.round((anchor - previous) / day)
        return Array.from({length: count}, (_, i) => previous + (i + 1) * day)
      }
      const count = Math.round((months(anchor, 1) - anchor) / day)
      return Array.from({length: count}, (_, i) => anchor + i * day)
    }
    case 'QuarterWindow':
    case 'YearWindow':
      if (!dayOne) return `a ${kind} anchor not on day 1 (the scheduler treats it as not satisfied)`
      return steps(kind === 'QuarterWindow' ? 3 : 12, months)
    default:
      return `window ${kind}`
  }
}

const directives: Record<string, {width: number; part: 'Y' | 'm' | 'd' | 'H' | 'M' | 'S'}> = {
  Y: {width: 4, part: 'Y'},
  m: {width: 2, part: 'm'},
  d: {width: 2, part: 'd'},
  H: {width: 2, part: 'H'},
  M: {width: 2, part: 'M'},
  S: {width: 2, part: 'S'},
}

/** strftime for the directives airlock mirrors, of a naive instant in UTC (%z: +0000). */
function format(at: Naive, pattern: string): string | undefined {
  const d = new Date(at)
  const parts = {
    Y: d.getUTCFullYear(),
    m: d.getUTCMonth() + 1,
    d: d.getUTCDate(),
    H: d.getUTCHours(),
    M: d.getUTCMinutes(),
    S: d.getUTCSeconds(),
  }
  let out = ''
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!
    if (c !== '%') {
      out += c
      continue
    }
    const directive = pattern[++i]
    if (directive === '%') out += '%'
    else if (directive === 'z') out += '+0000'
    else if (directive && directives[directive])
      out += String(parts[directives[directive].part]).padStart(directives[directive].width, '0')
    else return undefined
  }
  return out
}

/** strptime for the same directives (numbers of up to their width, as Python reads them), to a naive instant. */
function parse(key: string, pattern: string): Naive | string {
  const parts = {Y: 1900, m: 1, d: 1, H: 0, M: 0, S: 0}
  let at = 0
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!
    if (c !== '%') {
      if (key[at] !== c) return `key ${key} does not match output_format ${pattern}`
      at++
      continue
    }
    const directive = pattern[++i]
    if (directive === '%') {
      if (key[at] !== '%') return `key ${key} does not match output_format ${pattern}`
      at++
    } else if (directive && directives[directive]) {
      const digits = /^\d+/.exec(key.slice(at, at + directives[directive].width))?.[0]
      if (!digits) return `key ${key} does not match output_format ${pattern}`
      parts[directives[directive].part] = Number(digits)
      at += digits.length
    } else return `output_format ${pattern}`
  }
  if (at !== key.length) return `key ${key} does not match output_format ${pattern}`
  return Date.UTC(parts.Y, parts.m - 1, parts.d, parts.H, parts.M, parts.S)
}
