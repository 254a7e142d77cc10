import {taskInstanceIdPattern} from '../airflow/taskInstance.js'
import {usageError} from '../errors.js'
import {checkedLines, checkReadable, parseJsonLine} from './ndjsonInput.js'
import {plainSelectorNames} from './selectorNames.js'

/**
 * An audit-events findings file (its --output, or its --ndjson saved): one `{"type":"finding",…}`
 * line per finding and a `{"type":"summary",…}` line. replay-events --from-file takes it as the
 * list of task instances to replay: one command repairs what one audit found.
 */
export interface FindingsInput {
  /** The task instances of the missing_events and missing_unknown findings, each once. */
  tiIds: string[]
  /** Findings of the classes replay-events does not repair, by class. */
  skipped: Record<string, number>
  /** missing_unknown findings: replayed only when asked to include them (reported unknown otherwise). */
  unknown: number
  /** The audit's summary line ends the file: the audit that wrote it finished. */
  complete: boolean
}

const replayed = new Set(['missing_events', 'missing_unknown'])

/**
 * The findings of `path` when it is an audit's findings file (its first line says so), undefined
 * when it is another kind of file (an export's events). A file that starts as findings must be
 * findings throughout: a line of another shape is exit 2, naming it, before anything is written.
 */
export async function readFindingsFile(
  path: string,
  /** How the caller names the file, for messages (the command line: --from-file). */
  name = plainSelectorNames.fromFile,
): Promise<FindingsInput | undefined> {
  if (path === '-') return undefined
  await checkReadable(path, name)
  const tiIds = new Set<string>()
  const skipped: Record<string, number> = {}
  let unknown = 0
  let first = true
  let summarized = false
  for await (const {text, line} of checkedLines(path, name)) {
    const where = `${path} line ${line}`
    const value = parseJsonLine(text, where)
    const record = typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {}
    const type = (record as {type?: unknown}).type
    // A findings file's lines say so: a finding with a class, or the audit's summary with its
    // counts by class (another command's summary line, or an export's event, is not one).
    if (first && !isFinding(record) && !isAuditSummary(record)) return undefined
    first = false
    if (type === 'summary') {
      summarized = true
      continue
    }
    if (type !== 'finding')
      throw usageError(`${where} is not an audit finding, yet the file starts as audit-events findings.`, [
        'Pass a findings file (audit-events --output, or its --ndjson) or an export-events file, not both in one.',
      ])
    const {class: cls, ti_id: tiId} = record as {class?: unknown; ti_id?: unknown}
    if (typeof cls !== 'string') throw usageError(`${where}: a finding has a "class".`)
    if (!replayed.has(cls)) {
      skipped[cls] = (skipped[cls] ?? 0) + 1
      continue
    }
    if (typeof tiId !== 'string' || !taskInstanceIdPattern.test(tiId))
      throw usageError(`${where}: a ${cls} finding carries the task instance's "ti_id" (a UUID).`)
    tiIds.add(tiId.toLowerCase())
    if (cls === 'missing_unknown') unknown++
  }

  if (first) return undefined
  return {tiIds: [...tiIds], skipped, unknown, complete: summarized}
}

const isFinding = (record: object) =>
  (record as {type?: unknown}).type === 'finding' && typeof (record as {class?: unknown}).class === 'string'

const isAuditSummary = (record: object) => {
  const {type, counts} = record as {type?: unknown; counts?: unknown}
  return type === 'summary' && typeof counts === 'object' && counts !== null && 'missing_events' in counts
}
