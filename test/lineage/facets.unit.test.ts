import {describe, expect, it} from 'vitest'

import {jobDocumentation, jobOwners, jobTags, maxDocBytes, nominalTime, truncateUtf8} from '../../src/lineage/facets.js'
import type {DeclaredJob} from '../../src/store/families/lineage.js'
import {declaredJob} from '../../src/store/postgres/lineage.js'

/**
 * The facet shaping without a database. Rows follow apache-airflow-providers-openlineage's code
 * as released (plugins/listener.py `_on_task_instance_success`, plugins/adapter.py `_build_run` /
 * `_build_job`, utils/utils.py; read in the 2.6.0 and 2.20.3 wheels) and, where it has them, its
 * tests' expectations (the tests ship in no wheel: apache/airflow
 * providers/openlineage/tests/unit/openlineage/utils/test_utils.py at 4a7724e4c979: `test_truncate_string_to_byte_size_*`, `test_get_task_documentation`,
 * `test_get_dag_documentation`, `*_longer_than_allowed`).
 */
const noDocs = {doc: null, docMd: null, docJson: null, docYaml: null, docRst: null}
const declared = (over: Partial<DeclaredJob> = {}): DeclaredJob => ({
  taskOwner: 'airflow',
  taskOwners: ['airflow'],
  taskDocs: noDocs,
  dagDocMd: null,
  dagDescription: null,
  dagTags: [],
  operatorClass: null,
  selectiveEnable: null,
  emissionPolicyFlags: null,
  ...over,
})

describe('truncateUtf8 (_truncate_string_to_byte_size)', () => {
  const bytes = (s: string) => Buffer.byteLength(s, 'utf8')
  it.each([
    ['ascii below the limit', 'A'.repeat(maxDocBytes - 500), 'A'.repeat(maxDocBytes - 500)],
    ['ascii at the limit', 'A'.repeat(maxDocBytes), 'A'.repeat(maxDocBytes)],
    ['ascii over the limit', 'A'.repeat(maxDocBytes + 10), 'A'.repeat(maxDocBytes)],
    ['multibyte under the limit', '🧠'.repeat(1000), '🧠'.repeat(1000)],
    ['multibyte that fits exactly', '🚀'.repeat(maxDocBytes / 4), '🚀'.repeat(maxDocBytes / 4)],
    ['empty', '', ''],
    ['null characters', '\x00'.repeat(maxDocBytes + 10), '\x00'.repeat(maxDocBytes)],
  ])('%s', (_, input, expected) => {
    expect(truncateUtf8(input)).toBe(expected)
  })

  it('multibyte over the limit: whole emoji only, valid UTF-8, within the limit', () => {
    const result = truncateUtf8('🧠'.repeat(maxDocBytes / 4 + 10))
    expect(bytes(result)).toBeLessThanOrEqual(maxDocBytes)
    expect(result.endsWith('🧠')).toBe(true)
    expect(result).not.toContain('\ufffd')
  })

  it('a cut inside a character drops that character', () => {
    const s = 'A'.repeat(10) + '🧠'
    expect(truncateUtf8(s, bytes(s) - 2)).toBe('A'.repeat(10))
    // 𝄞 (U+1D11E) is 4 bytes: 3 bytes of room leave nothing of it.
    expect(truncateUtf8('ab𝄞', 5)).toBe('ab')
  })
})

describe('jobDocumentation (get_task_documentation, else get_dag_documentation)', () => {
  it.each([
    ['nothing', declared(), undefined],
    ['doc', declared({taskDocs: {...noDocs, doc: 'Test doc'}}), {description: 'Test doc', contentType: 'text/plain'}],
    [
      'doc_md',
      declared({taskDocs: {...noDocs, docMd: 'test.md'}}),
      {description: 'test.md', contentType: 'text/markdown'},
    ],
    [
      'doc_json',
      declared({taskDocs: {...noDocs, docJson: '{"key": "value"}'}}),
      {description: '{"key": "value"}', contentType: 'application/json'},
    ],
    [
      'doc_yaml',
      declared({taskDocs: {...noDocs, docYaml: 'key: value'}}),
      {description: 'key: value', contentType: 'application/x-yaml'},
    ],
    [
      'doc_rst',
      declared({taskDocs: {...noDocs, docRst: 'Test RST'}}),
      {description: 'Test RST', contentType: 'text/x-rst'},
    ],
    [
      'doc before doc_md',
      declared({taskDocs: {...noDocs, doc: 'plain', docMd: 'md'}}),
      {description: 'plain', contentType: 'text/plain'},
    ],
    [
      "the DAG's doc_md when the task has none",
      declared({dagDocMd: 'test.md'}),
      {description: 'test.md', contentType: 'text/markdown'},
    ],
    [
      "the DAG's doc_md before its description",
      declared({dagDocMd: 'test.md', dagDescription: 'Description text'}),
      {description: 'test.md', contentType: 'text/markdown'},
    ],
    [
      "the DAG's description",
      declared({dagDescription: 'Description text'}),
      {description: 'Description text', contentType: 'text/plain'},
    ],
    [
      "the task's doc before the DAG's",
      declared({taskDocs: {...noDocs, docRst: 'rst'}, dagDocMd: 'dag md'}),
      {description: 'rst', contentType: 'text/x-rst'},
    ],
    [
      'an empty doc counts as none (Python truthiness)',
      declared({taskDocs: {...noDocs, doc: ''}, dagDescription: 'Description text'}),
      {description: 'Description text', contentType: 'text/plain'},
    ],
  ])('%s', (_, input, expected) => {
    expect(jobDocumentation(input)).toEqual(expected)
  })

  it('longer than allowed: cut to 64 KiB, task and DAG alike', () => {
    const doc = 'A'.repeat(maxDocBytes + 10)
    expect(jobDocumentation(declared({taskDocs: {...noDocs, doc}}))).toEqual({
      description: 'A'.repeat(maxDocBytes),
      contentType: 'text/plain',
    })
    expect(jobDocumentation(declared({dagDocMd: doc}))).toEqual({
      description: 'A'.repeat(maxDocBytes),
      contentType: 'text/markdown',
    })
  })
})

describe('jobOwners (the listener owners, sorted by _build_job)', () => {
  it.each([
    ["the task's own owner", declared({taskOwner: 'alice', taskOwners: ['alice', 'bob']}), ['alice']],
    ['a task owner with commas is split and stripped', declared({taskOwner: 'zoe , adam'}), ['adam', 'zoe']],
    [
      "the default owner: the DAG's owners instead",
      declared({taskOwners: ['airflow', 'bob', 'alice']}),
      ['airflow', 'alice', 'bob'],
    ],
    ['every task at the default', declared(), ['airflow']],
    [
      "the DAG's owners are split on commas inside a task owner too",
      declared({taskOwners: ['airflow', 'b, a']}),
      ['a', 'airflow', 'b'],
    ],
    [
      'Python sorts by code point: uppercase first',
      declared({taskOwner: 'bob,Alice,alice'}),
      ['Alice', 'alice', 'bob'],
    ],
    ['an empty owner stays (split never returns an empty list)', declared({taskOwner: ''}), ['']],
  ])('%s', (_, input, expected) => {
    expect(jobOwners(input)).toEqual(expected)
  })
})

describe('jobTags', () => {
  it('sorted, key and value the tag, source AIRFLOW; none without tags', () => {
    expect(jobTags(declared({dagTags: ['team:data', 'etl', 'Z']}))).toEqual([
      {key: 'Z', value: 'Z', source: 'AIRFLOW'},
      {key: 'etl', value: 'etl', source: 'AIRFLOW'},
      {key: 'team:data', value: 'team:data', source: 'AIRFLOW'},
    ])
    expect(jobTags(declared())).toEqual([])
  })
})

describe('nominalTime (the listener data interval, isoformat)', () => {
  it.each([
    ['no start: no facet', null, 1_000_000n, undefined],
    ['no end: start only', 0n, null, {nominalStartTime: '1970-01-01T00:00:00+00:00'}],
    [
      'microseconds when not zero, as isoformat writes them',
      1_741_910_400_000_001n,
      1_741_996_800_000_000n,
      {nominalStartTime: '2025-03-14T00:00:00.000001+00:00', nominalEndTime: '2025-03-15T00:00:00+00:00'},
    ],
  ])('%s', (_, start, end, expected) => {
    expect(nominalTime(start === null ? null : {epochMicros: start}, end === null ? null : {epochMicros: end})).toEqual(
      expected,
    )
  })
})

describe('declaredJob (the serialized DAG fields the job facets read)', () => {
  const op = (fields: Record<string, unknown>) => ({__type: 'operator', __var: fields})
  it('reads owner, docs, tags, doc_md and description; a left-out owner is the schema default airflow', () => {
    const serialized = {
      __version: 2,
      dag: {
        dag_id: 'etl',
        doc_md: 'DAG docs',
        description: 'ETL',
        tags: ['b', 'a'],
        tasks: [op({task_id: 'load', doc_md: 'Loads.'}), op({task_id: 'other', owner: 'alice'})],
      },
    }
    expect(declaredJob(serialized, 'load')).toEqual({
      taskOwner: 'airflow',
      taskOwners: ['airflow', 'alice'],
      taskDocs: {doc: null, docMd: 'Loads.', docJson: null, docYaml: null, docRst: null},
      dagDocMd: 'DAG docs',
      dagDescription: 'ETL',
      dagTags: ['b', 'a'],
      operatorClass: null,
      selectiveEnable: null,
      emissionPolicyFlags: null,
    })
  })

  it('format 3 (3.1+): a left-out owner is client_defaults.tasks.owner; a mapped task keeps its fields in partial_kwargs', () => {
    const serialized = {
      __version: 3,
      client_defaults: {tasks: {owner: 'data-eng'}},
      dag: {
        dag_id: 'etl',
        tasks: [
          op({task_id: 'mapped', _is_mapped: true, partial_kwargs: {owner: 'bob', doc: 'Each file.'}}),
          op({task_id: 'plain'}),
        ],
      },
    }
    expect(declaredJob(serialized, 'mapped')).toMatchObject({
      taskOwner: 'bob',
      taskOwners: ['bob', 'data-eng'],
      taskDocs: {doc: 'Each file.'},
      dagTags: [],
      dagDocMd: null,
      dagDescription: null,
    })
    expect(declaredJob(serialized, 'plain')?.taskOwner).toBe('data-eng')
  })

  it('null when the task is not in the document or there is no document', () => {
    expect(declaredJob({dag: {tasks: [op({task_id: 'a'})]}}, 'b')).toBeNull()
    expect(declaredJob(undefined, 'a')).toBeNull()
  })
})
