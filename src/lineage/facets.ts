import type {DeclaredJob} from '../store/families/lineage.js'
import {pythonIsoformat, type MicroInstant} from './staticUuid.js'

/**
 * The facets the worker's COMPLETE carries that the database lets airlock know, shaped as
 * apache-airflow-providers-openlineage shapes them, read in the released wheels:
 * `plugins/listener.py` `_on_task_instance_success` computes them (nominal time, owners and tags
 * from 2.4.0, documentation from 2.6.0), `plugins/adapter.py` `complete_task` → `_build_run` /
 * `_build_job` wraps them (this order and shape from 2.4.0, the documentation's `contentType`
 * from 2.6.0), `utils/utils.py` `get_task_documentation`, `get_dag_documentation`,
 * `_truncate_string_to_byte_size` (2.6.0, unchanged in meaning through 2.20.3) read the docs.
 * Schema URLs are the ones openlineage-python's generated facet classes name (`_get_schema()` in
 * openlineage/client/generated/ nominal_time_run.py, ownership_job.py, documentation_job.py,
 * tags_job.py; read in the released openlineage-python 1.54.0 wheel, provider 2.20.3 needing
 * 1.52.0 or later).
 */

export const nominalTimeSchema = '1-0-1/NominalTimeRunFacet.json#/$defs/NominalTimeRunFacet'
export const documentationSchema = '1-1-0/DocumentationJobFacet.json#/$defs/DocumentationJobFacet'
export const ownershipSchema = '1-0-1/OwnershipJobFacet.json#/$defs/OwnershipJobFacet'
export const tagsSchema = '1-0-0/TagsJobFacet.json#/$defs/TagsJobFacet'

/** `_MAX_DOC_BYTES` of utils.py: documentation is cut to 64 KiB of UTF-8. */
export const maxDocBytes = 64 * 1024

/**
 * `nominalTime` (`_build_run`): only when the run's data_interval_start is set, as the listener
 * passes `dagrun.data_interval_start.isoformat()`; `nominalEndTime` is the end's isoformat, left
 * out when the end is not set (the client's serializer drops None).
 */
export function nominalTime(
  start: MicroInstant | null,
  end: MicroInstant | null,
): {nominalStartTime: string; nominalEndTime?: string} | undefined {
  if (!start) return undefined
  return {nominalStartTime: pythonIsoformat(start), ...(end ? {nominalEndTime: pythonIsoformat(end)} : {})}
}

/**
 * The listener's `owners=[x.strip() for x in (task if task.owner != "airflow" else dag).owner.split(",")]`,
 * sorted by `_build_job` (`sorted(job_owners)`). A DAG's `owner` is `", ".join({t.owner for t in
 * dag.tasks})`: its task owners, each once.
 */
export function jobOwners(declared: DeclaredJob): string[] {
  const owner = declared.taskOwner !== 'airflow' ? declared.taskOwner : declared.taskOwners.join(', ')
  return pythonSorted(owner.split(',').map(pythonStrip))
}

/** `_build_job`'s tags: each DAG tag, sorted, as `{key: tag, value: tag, source: "AIRFLOW"}`. */
export function jobTags(declared: DeclaredJob): Array<{key: string; value: string; source: 'AIRFLOW'}> {
  return pythonSorted(declared.dagTags).map((tag) => ({key: tag, value: tag, source: 'AIRFLOW'}))
}

/**
 * The listener's `get_task_documentation(task)`, or when that has none `get_dag_documentation(dag)`:
 * the first non-empty of the task's doc (text/plain), doc_md (text/markdown), doc_json
 * (application/json), doc_yaml (application/x-yaml), doc_rst (text/x-rst), then the DAG's doc_md
 * (text/markdown) and description (text/plain), cut to 64 KiB of UTF-8.
 */
export function jobDocumentation(declared: DeclaredJob): {description: string; contentType: string} | undefined {
  const {doc, docMd, docJson, docYaml, docRst} = declared.taskDocs
  const candidates: Array<[string | null, string]> = [
    [doc, 'text/plain'],
    [docMd, 'text/markdown'],
    [docJson, 'application/json'],
    [docYaml, 'application/x-yaml'],
    [docRst, 'text/x-rst'],
    [declared.dagDocMd, 'text/markdown'],
    [declared.dagDescription, 'text/plain'],
  ]
  const found = candidates.find(([text]) => text)
  if (!found) return undefined
  return {description: truncateUtf8(found[0]!), contentType: found[1]}
}

/**
 * `_truncate_string_to_byte_size`: `s.encode("utf-8")[:max_size].decode("utf-8", errors="ignore")`,
 * so a character the cut splits is dropped whole.
 */
export function truncateUtf8(s: string, maxBytes = maxDocBytes): string {
  const bytes = Buffer.from(s, 'utf8')
  if (bytes.length <= maxBytes) return s
  let end = maxBytes
  // The byte after the cut continues a character (10xxxxxx): back off to where that character starts.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--
  return bytes.subarray(0, end).toString('utf8')
}

/** Python's `sorted()` of strings: by code point (JavaScript's default sort compares UTF-16 units). */
function pythonSorted(values: readonly string[]): string[] {
  const byCodePoint = (a: string, b: string) => {
    const [x, y] = [Array.from(a), Array.from(b)]
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      const diff = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!
      if (diff !== 0) return diff
    }
    return x.length - y.length
  }
  return [...values].sort(byCodePoint)
}

/** The characters Python's `str.isspace()` is true for (JavaScript's `\s` differs: it has U+FEFF, lacks U+001C–U+001F and U+0085). */
const pythonWhitespace = new Set([
  ...[0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680],
  ...Array.from({length: 11}, (_, i) => 0x2000 + i),
  ...[0x2028, 0x2029, 0x202f, 0x205f, 0x3000],
])

/** Python's `str.strip()`. */
function pythonStrip(s: string): string {
  const chars = Array.from(s)
  const space = (c: string | undefined) => c !== undefined && pythonWhitespace.has(c.codePointAt(0)!)
  let [start, end] = [0, chars.length]
  while (start < end && space(chars[start])) start++
  while (end > start && space(chars[end - 1])) end--
  return chars.slice(start, end).join('')
}
