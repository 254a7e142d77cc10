import {taskInstanceIdPattern, type TaskInstanceRef} from '../airflow/taskInstance.js'
import {usageError} from '../errors.js'

/**
 * Flag values checked at the edge, into the types src/ works with. Messages name the flag and
 * what is allowed.
 */
export function parseTimestamp(
  value: string,
  flag: string,
  forms = 'an ISO-8601 timestamp such as 2026-12-01 or 2026-12-01T03:00:00Z',
): Date {
  // ISO-8601; without a zone designator the value is taken as UTC, as Airflow stores it.
  const withZone = /[zZ]|[+-]\d\d:?\d\d$/.test(value) || /^\d{4}-\d\d-\d\d$/.test(value) ? value : `${value}Z`
  const date = new Date(/^\d{4}-\d\d-\d\d$/.test(withZone) ? `${withZone}T00:00:00Z` : withZone)
  if (!/^\d{4}-\d\d-\d\d/.test(value) || Number.isNaN(date.getTime())) {
    throw usageError(`${flag} must be ${forms} (got "${value}").`)
  }
  // JavaScript rolls an impossible date over (2025-02-30 is March 2): refuse it as written.
  const impossible = impossibleCalendarPart(value)
  if (impossible) throw usageError(`${flag} ${value}: ${impossible}; nothing was done.`)

  return date
}

/** "26h", "7d", "90m": a time this long before now (a cron job's window), as `--since 26h` takes it. */
const relativeTime = /^(\d+)(m|h|d)$/

export const isRelativeTime = (value: string) => relativeTime.test(value.trim())

/** What --since and --until take, for every message that refuses a value of theirs. */
const windowBoundForms =
  'an ISO-8601 time (2026-12-01, 2026-12-01T03:00:00Z) or a whole duration back from now: 90m, 26h or 7d'

/**
 * A window bound (--since, --until): an ISO-8601 time as parseTimestamp takes it, or a duration
 * back from `now` (26h, 7d, 90m), resolved once when the command starts.
 */
export function parseWindowBound(value: string, flag: string, now = new Date()): Date {
  const match = relativeTime.exec(value.trim())
  if (!match) return parseTimestamp(value, flag, windowBoundForms)
  const unit = {m: 60_000, h: 3_600_000, d: 86_400_000}[match[2] as 'm' | 'h' | 'd']
  const bound = new Date(now.getTime() - Number(match[1]) * unit)
  // Before year 0 or past what a Date holds: a typo, not a window.
  if (Number.isNaN(bound.getTime()) || bound.getUTCFullYear() < 1)
    throw usageError(`${flag} ${value} reaches before the year 1; give a time or a shorter duration.`)
  return bound
}

const monthNames = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
]

/** Why the date or time as written does not exist (day past the month's end, hour 24, …), if it does not. */
function impossibleCalendarPart(value: string): string | undefined {
  const match = /^(\d{4})-(\d\d)-(\d\d)(?:[T ](\d\d)(?::(\d\d)(?::(\d\d))?)?)?/.exec(value)
  if (!match) return undefined
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  if (month < 1 || month > 12) return `there is no month ${match[2]}`
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate()
  if (day < 1 || day > days) return `${monthNames[month - 1]} ${year} has ${days} days`
  const [hour, minute, second] = [match[4], match[5], match[6]].map((part) => (part === undefined ? 0 : Number(part)))
  if (hour! > 23) return `there is no hour ${match[4]}`
  if (minute! > 59) return `there is no minute ${match[5]}`
  if (second! > 59) return `there is no second ${match[6]}`
  return undefined
}

/** How far ahead of this machine's clock an --end-date may be (clock skew between hosts). */
export const endDateSkewMs = 5 * 60_000

/** --end-date: a timestamp not in the future, unless forced. */
export function parseEndDate(value: string, force: boolean): Date {
  const date = parseTimestamp(value, '--end-date')
  if (!force && date.getTime() > Date.now() + endDateSkewMs) {
    throw usageError(`--end-date ${date.toISOString()} is in the future; a task cannot have finished then.`, [
      'Give the time it finished, or --force-end-date to record it anyway.',
    ])
  }

  return date
}

/** --since before --until, or exit 2. */
export function checkRange(since: Date | undefined, until: Date | undefined): void {
  if (since && until && since.getTime() >= until.getTime()) {
    throw usageError(
      `--since ${since.toISOString()} is not before --until ${until.toISOString()}: the range is empty.`,
      ['Swap them, or widen the range.'],
    )
  }
}

export function parseShard(value: string): {index: number; count: number} {
  const match = /^(\d+)\/(\d+)$/.exec(value)
  const index = Number(match?.[1])
  const count = Number(match?.[2])
  if (!match || count < 1 || index < 1 || index > count)
    throw usageError(`--shard must be K/N with 1 ≤ K ≤ N, e.g. 1/4 (got "${value}").`)
  return {index, count}
}

export function parseJsonObject(value: string, flag: string): string {
  let parsed: unknown
  try {
    parsed = JSON.parse(value)
  } catch (error) {
    throw usageError(`${flag} is not valid JSON (${(error as Error).message}).`, [
      `Example: ${flag} '{"source": "backfill"}'`,
    ])
  }

  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw usageError(`${flag} must be a JSON object, e.g. '{"source": "backfill"}'.`)
  return JSON.stringify(parsed)
}

/**
 * A duration in one vocabulary for every flag: 500ms, 5s, 5m (or 5min), 1h. A bare number is
 * refused: `--lock-timeout 5` meant five seconds to whoever typed it and 5 ms to airlock.
 * `maxMs` bounds it (one hour unless the flag says otherwise).
 */
export function parseDuration(value: string, flag: string, maxMs = 3_600_000): number {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)$/.exec(value.trim())
  if (!match) {
    const bare = /^\d+(?:\.\d+)?$/.test(value.trim())
    throw usageError(
      `${flag} must be a duration with its unit: 500ms, 5s, 5m or 1h (got "${value}"${bare ? ', a number without a unit' : ''}).`,
    )
  }
  const amount = Number(match[1])
  const factor = {ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000}[match[2]!] ?? 1
  const ms = Math.round(amount * factor)
  if (ms < 1 || ms > maxMs)
    throw usageError(`${flag} must be between 1ms and ${formatDuration(maxMs)} (got "${value}").`)
  return ms
}

const formatDuration = (ms: number) =>
  ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : ms % 60_000 === 0 ? `${ms / 60_000}m` : `${ms}ms`

export function parseTaskInstanceId(value: string): string {
  if (!taskInstanceIdPattern.test(value))
    throw usageError(`--ti-id must be a task instance UUID (task_instance.id), got "${value}".`)
  return value.toLowerCase()
}

/**
 * A --ti-id: the task instance's UUID, or its key as airlock's tables print it,
 * `dag_id/run_id/task_id` with `[map_index]` for a mapped one. The DAG is the first segment and
 * the task the last, so a run id holding "/" stays whole. A key names the current try whatever
 * its id has become.
 */
export function parseTaskInstanceRef(value: string): TaskInstanceRef {
  if (taskInstanceIdPattern.test(value)) return {tiId: value.toLowerCase()}
  const parts = value.split('/')
  const last = /^(.+?)(?:\[(-1|\d+)\])?$/.exec(parts.at(-1) ?? '')
  if (parts.length < 3 || !last || parts.some((part) => part === '')) {
    throw usageError(
      `--ti-id must be a task instance UUID (task_instance.id) or its key dag_id/run_id/task_id[map_index] (got "${value}").`,
    )
  }
  return {
    key: {
      dagId: parts[0]!,
      runId: parts.slice(1, -1).join('/'),
      taskId: last[1]!,
      mapIndex: last[2] === undefined ? -1 : Number(last[2]),
    },
  }
}

/** "0,10,100": a comma-separated list of whole numbers ≥ 0. */
export function parseIntegerList(value: string, flag: string): number[] {
  const items = value.split(',').map((part) => part.trim())
  if (items.some((item) => !/^\d+$/.test(item)))
    throw usageError(`${flag} must be comma-separated whole numbers, e.g. 0,10,100 (got "${value}").`)
  return items.map(Number)
}
