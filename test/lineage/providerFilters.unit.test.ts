import os from 'node:os'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {emissionByProvider} from '../../src/lineage/lineage.js'
import {lineageSettings, lineageWarnings} from '../../src/lineage/settings.js'
import {declaredJob} from '../../src/store/postgres/lineage.js'
import {usageMessage} from '../support/usage.js'

/** Where a run's spool is and how long it waits: the command's flags give these. */
const delivery = {spoolDir: path.join(os.tmpdir(), 'airlock-test-spool'), waitMs: 30_000, required: false}

/**
 * The provider's controls on task events, as airlock reads and applies them: a task the
 * provider's listener sends no COMPLETE for gets none from airlock either, and one it sends
 * without extracting operator metadata gets no outputs.
 */
const op = (fields: Record<string, unknown>) => ({__type: 'operator', __var: fields})
const enable = {__class: 'airflow.sdk.definitions.param.Param', default: true, description: null, schema: {const: true}}
const disable = {...enable, default: false, schema: {const: false}}

describe('what the serialized DAG says about a task', () => {
  it('its operator class as the provider names it (_task_module + task_type, or _task_type in older documents)', () => {
    const serialized = {
      dag: {
        tasks: [
          op({task_id: 'a', _task_module: 'airflow.providers.standard.operators.bash', task_type: 'BashOperator'}),
          op({task_id: 'b', _task_module: 'my.ops', _task_type: 'Legacy'}),
          op({task_id: 'c'}),
        ],
      },
    }
    expect(declaredJob(serialized, 'a')?.operatorClass).toBe('airflow.providers.standard.operators.bash.BashOperator')
    expect(declaredJob(serialized, 'b')?.operatorClass).toBe('my.ops.Legacy')
    expect(declaredJob(serialized, 'c')?.operatorClass).toBeNull()
  })

  it("its _selective_enable_ol param, the task's first, else the DAG's; params as pairs (3.x) or an object", () => {
    const serialized = {
      dag: {
        params: [['_selective_enable_ol', enable]],
        tasks: [
          op({task_id: 'off', params: [['_selective_enable_ol', disable]]}),
          op({task_id: 'inherits'}),
          op({task_id: 'object', params: {_selective_enable_ol: enable}}),
        ],
      },
    }
    expect(declaredJob(serialized, 'off')?.selectiveEnable).toBe(false)
    expect(declaredJob(serialized, 'inherits')?.selectiveEnable).toBe(true)
    expect(declaredJob(serialized, 'object')?.selectiveEnable).toBe(true)
    expect(declaredJob({dag: {tasks: [op({task_id: 'x'})]}}, 'x')?.selectiveEnable).toBeNull()
  })

  it("its _openlineage_emission_policy flags, the task's own only (as Airflow 3.2.2 serializes Param({...}))", () => {
    const flags = {
      __class: 'airflow.sdk.definitions.param.Param',
      default: {__var: {emit: false, extract_operator_metadata: false}, __type: 'dict'},
      description: null,
      schema: {__var: {}, __type: 'dict'},
      source: null,
    }
    const serialized = {
      dag: {
        params: [['_openlineage_emission_policy', flags]],
        tasks: [op({task_id: 'own', params: [['_openlineage_emission_policy', flags]]}), op({task_id: 'none'})],
      },
    }
    expect(declaredJob(serialized, 'own')?.emissionPolicyFlags).toEqual({emit: false, extract_operator_metadata: false})
    expect(declaredJob(serialized, 'none')?.emissionPolicyFlags).toBeNull()
  })
})

/**
 * `[openlineage] disabled_for_operators`, `selective_enable` and `emission_policy` as the
 * provider's listener resolves them for a task's COMPLETE (utils/emission_policy.py
 * `resolve_task_emission_policy`, 2.19.0+). Each row's `emit` and `extract` are what
 * apache-airflow-providers-openlineage 2.20.3's own `resolve_task_emission_policy` returned for
 * the same `AIRFLOW__OPENLINEAGE__*` variables and a task `load` of DAG `etl` with that operator
 * class and params (run in Python with Airflow 3.2.2 and the released wheel installed). The task's
 * params are as Airflow 3.2.2's serializer writes `Param(True, const=True)` and
 * `Param({...flags})`.
 */
const emissionCases: Array<{
  name: string
  env?: Record<string, string>
  task?: {op?: string; selective?: boolean; flags?: Record<string, boolean>}
  emit: boolean
  extract: boolean
}> = [
  {name: 'no option set: every task emits, with outputs', emit: true, extract: true},
  {
    name: 'disabled_for_operators names the class',
    env: {AIRFLOW__OPENLINEAGE__DISABLED_FOR_OPERATORS: ' a.B ; c.D;'},
    task: {op: 'a.B'},
    emit: false,
    extract: true,
  },
  {
    name: 'disabled_for_operators names another class',
    env: {AIRFLOW__OPENLINEAGE__DISABLED_FOR_OPERATORS: 'a.B'},
    task: {op: 'x.Y'},
    emit: true,
    extract: true,
  },
  {
    name: 'selective_enable, task enabled',
    env: {AIRFLOW__OPENLINEAGE__SELECTIVE_ENABLE: 'True'},
    task: {selective: true},
    emit: true,
    extract: true,
  },
  {
    name: 'selective_enable, task disabled',
    env: {AIRFLOW__OPENLINEAGE__SELECTIVE_ENABLE: 'True'},
    task: {selective: false},
    emit: false,
    extract: true,
  },
  {
    name: 'selective_enable, task never enabled',
    env: {AIRFLOW__OPENLINEAGE__SELECTIVE_ENABLE: 'True'},
    emit: false,
    extract: true,
  },
  {
    name: 'selective_enable with an enabled task whose operator is disabled (2.19.0+: the dag+task rule wins)',
    env: {AIRFLOW__OPENLINEAGE__DISABLED_FOR_OPERATORS: 'a.B', AIRFLOW__OPENLINEAGE__SELECTIVE_ENABLE: 'True'},
    task: {op: 'a.B', selective: true},
    emit: true,
    extract: true,
  },
  {
    name: 'global emit false',
    env: {AIRFLOW__OPENLINEAGE__EMISSION_POLICY: '[{"scope": {}, "controls": {"emit": false}}]'},
    emit: false,
    extract: true,
  },
  {
    name: "global emit false, the DAG's rule emit true",
    env: {
      AIRFLOW__OPENLINEAGE__EMISSION_POLICY:
        '[{"scope": {}, "controls": {"emit": false}}, {"scope": {"dag_id": "etl"}, "controls": {"emit": true}}]',
    },
    emit: true,
    extract: true,
  },
  {
    name: 'emit_task_events beats emit within a rule',
    env: {
      AIRFLOW__OPENLINEAGE__EMISSION_POLICY:
        '[{"scope": {"dag_id": "etl"}, "controls": {"emit": true, "emit_task_events": false}}]',
    },
    emit: false,
    extract: true,
  },
  {
    name: 'emit_dag_events alone does not touch task events',
    env: {
      AIRFLOW__OPENLINEAGE__EMISSION_POLICY: '[{"scope": {"dag_id": "etl"}, "controls": {"emit_dag_events": false}}]',
    },
    emit: true,
    extract: true,
  },
  {
    name: 'an operator rule, exact',
    env: {AIRFLOW__OPENLINEAGE__EMISSION_POLICY: '[{"scope": {"operator": "a.B"}, "controls": {"emit": false}}]'},
    task: {op: 'a.B'},
    emit: false,
    extract: true,
  },
  {
    name: 'an operator rule, regex',
    env: {
      AIRFLOW__OPENLINEAGE__EMISSION_POLICY:
        '[{"scope": {"operator": "airflow\\\\.providers\\\\.standard\\\\..*"}, "match_mode": "regex", "controls": {"emit": false}}]',
    },
    task: {op: 'airflow.providers.standard.operators.python.PythonOperator'},
    emit: false,
    extract: true,
  },
  {
    name: 'a regex dag+task rule that matches',
    env: {
      AIRFLOW__OPENLINEAGE__EMISSION_POLICY:
        '[{"scope": {"dag_id": "et.", "task_id": "lo(?P<x>a)d"}, "match_mode": "regex", "controls": {"emit": false}}]',
    },
    emit: false,
    extract: true,
  },
  {
    name: 'a regex dag+task rule that does not fully match',
    env: {
      AIRFLOW__OPENLINEAGE__EMISSION_POLICY:
        '[{"scope": {"dag_id": "et", "task_id": "load"}, "match_mode": "regex", "controls": {"emit": false}}]',
    },
    emit: true,
    extract: true,
  },
  {
    name: 'extract_operator_metadata false: sent, without outputs',
    env: {AIRFLOW__OPENLINEAGE__EMISSION_POLICY: '[{"scope": {}, "controls": {"extract_operator_metadata": false}}]'},
    emit: true,
    extract: false,
  },
  {
    name: 'a dag+task rule brings extraction back',
    env: {
      AIRFLOW__OPENLINEAGE__EMISSION_POLICY:
        '[{"scope": {}, "controls": {"extract_operator_metadata": false}}, {"scope": {"dag_id": "etl", "task_id": "load"}, "controls": {"extract_operator_metadata": true}}]',
    },
    emit: true,
    extract: true,
  },
  {
    name: 'within a tier the last rule wins',
    env: {
      AIRFLOW__OPENLINEAGE__EMISSION_POLICY:
        '[{"scope": {}, "controls": {"emit": false}}, {"scope": {}, "controls": {"emit": true}}]',
    },
    emit: true,
    extract: true,
  },
  {
    name: 'a rule with an unknown key is ignored',
    env: {AIRFLOW__OPENLINEAGE__EMISSION_POLICY: '[{"scope": {}, "controls": {"emit": false}, "extra": 1}]'},
    emit: true,
    extract: true,
  },
  {
    name: 'a control that is not a boolean: rule ignored',
    env: {AIRFLOW__OPENLINEAGE__EMISSION_POLICY: '[{"scope": {}, "controls": {"emit": "false"}}]'},
    emit: true,
    extract: true,
  },
  {
    name: 'task_id without dag_id: rule ignored',
    env: {AIRFLOW__OPENLINEAGE__EMISSION_POLICY: '[{"scope": {"task_id": "load"}, "controls": {"emit": false}}]'},
    emit: true,
    extract: true,
  },
  {
    name: 'an unknown match_mode: rule ignored',
    env: {AIRFLOW__OPENLINEAGE__EMISSION_POLICY: '[{"scope": {}, "match_mode": "glob", "controls": {"emit": false}}]'},
    emit: true,
    extract: true,
  },
  {
    name: 'operator with emit_dag_events: rule ignored',
    env: {
      AIRFLOW__OPENLINEAGE__EMISSION_POLICY:
        '[{"scope": {"operator": "a.B"}, "controls": {"emit_dag_events": false, "emit": false}}]',
    },
    task: {op: 'a.B'},
    emit: true,
    extract: true,
  },
  {
    name: "not JSON: the provider's defaults, legacy options ignored too",
    env: {AIRFLOW__OPENLINEAGE__EMISSION_POLICY: '[{', AIRFLOW__OPENLINEAGE__DISABLED_FOR_OPERATORS: 'a.B'},
    task: {op: 'a.B'},
    emit: true,
    extract: true,
  },
  {
    name: 'JSON but not an array: defaults',
    env: {AIRFLOW__OPENLINEAGE__EMISSION_POLICY: '{"scope": {}}', AIRFLOW__OPENLINEAGE__SELECTIVE_ENABLE: 'True'},
    emit: true,
    extract: true,
  },
  {
    name: 'a regex scope that is not a string: defaults for all',
    env: {
      AIRFLOW__OPENLINEAGE__EMISSION_POLICY:
        '[{"scope": {}, "controls": {"emit": false}}, {"scope": {"dag_id": 1}, "match_mode": "regex", "controls": {"emit": false}}]',
    },
    emit: true,
    extract: true,
  },
  {
    name: "legacy disabled operator, the DAG's rule emit true wins (dag tier before operator tier)",
    env: {
      AIRFLOW__OPENLINEAGE__EMISSION_POLICY: '[{"scope": {"dag_id": "etl"}, "controls": {"emit": true}}]',
      AIRFLOW__OPENLINEAGE__DISABLED_FOR_OPERATORS: 'a.B',
    },
    task: {op: 'a.B'},
    emit: true,
    extract: true,
  },
  {name: "the task's authoring flag emit false", task: {flags: {emit: false}}, emit: false, extract: true},
  {
    name: 'a locked rule beats the authoring flag',
    env: {AIRFLOW__OPENLINEAGE__EMISSION_POLICY: '[{"scope": {}, "controls": {"emit": true}, "locked": true}]'},
    task: {flags: {emit: false}},
    emit: true,
    extract: true,
  },
  {
    name: 'authoring emit_task_events beats emit',
    env: {AIRFLOW__OPENLINEAGE__EMISSION_POLICY: '[{"scope": {}, "controls": {"emit": false}}]'},
    task: {flags: {emit: false, emit_task_events: true}},
    emit: true,
    extract: true,
  },
  {
    name: 'authoring extract_operator_metadata false',
    task: {flags: {extract_operator_metadata: false}},
    emit: true,
    extract: false,
  },
  {
    name: 'a locked extract rule beats the authoring flag',
    env: {
      AIRFLOW__OPENLINEAGE__EMISSION_POLICY:
        '[{"scope": {"dag_id": "etl"}, "controls": {"extract_operator_metadata": true}, "locked": true}]',
    },
    task: {flags: {extract_operator_metadata: false}},
    emit: true,
    extract: true,
  },
]

const serializedParam = (value: unknown) => ({
  __class: 'airflow.sdk.definitions.param.Param',
  default: typeof value === 'object' && value !== null ? {__var: value, __type: 'dict'} : value,
  description: null,
  schema: {__var: typeof value === 'boolean' ? {const: value} : {}, __type: 'dict'},
  source: null,
})

function loadTask(task: {op?: string; selective?: boolean; flags?: Record<string, boolean>} = {}) {
  const [module, type] = task.op
    ? [task.op.slice(0, task.op.lastIndexOf('.')), task.op.slice(task.op.lastIndexOf('.') + 1)]
    : ['x', 'Op']
  const params: unknown[] = []
  if (task.selective !== undefined) params.push(['_selective_enable_ol', serializedParam(task.selective)])
  if (task.flags) params.push(['_openlineage_emission_policy', serializedParam(task.flags)])
  return declaredJob({dag: {tasks: [op({task_id: 'load', _task_module: module, task_type: type, params})]}}, 'load')
}

describe("emissionByProvider: the provider's resolve_task_emission_policy, case by case", () => {
  const base = {AIRFLOW_CONFIG: '/nonexistent/airflow.cfg', OPENLINEAGE_URL: 'http://ol:5000'}
  it.each(emissionCases)('$name', async ({env, task, emit, extract}) => {
    const settings = await lineageSettings({lineage: true, delivery}, {...base, ...env}, os.tmpdir())
    if (!settings.enabled) throw new Error('lineage is off')
    const decided = emissionByProvider({dagId: 'etl', taskId: 'load', declared: loadTask(task)}, settings.filters)
    expect({emit: decided.emit, extract: decided.extractOperatorMetadata}).toEqual({emit, extract})
    // An item skipped says why.
    if (!emit) expect(decided.why).toBeTruthy()
  })

  it('says which option turned a task off', async () => {
    const read = (env: Record<string, string>) =>
      lineageSettings({lineage: true, delivery}, {...base, ...env}, os.tmpdir())
    const why = async (env: Record<string, string>, task: Parameters<typeof loadTask>[0]) => {
      const settings = await read(env)
      if (!settings.enabled) throw new Error('lineage is off')
      return emissionByProvider({dagId: 'etl', taskId: 'load', declared: loadTask(task)}, settings.filters).why
    }
    expect(await why({AIRFLOW__OPENLINEAGE__DISABLED_FOR_OPERATORS: 'a.B'}, {op: 'a.B'})).toContain(
      'disabled_for_operators',
    )
    expect(await why({AIRFLOW__OPENLINEAGE__SELECTIVE_ENABLE: 'true'}, {})).toContain('selective_enable')
    expect(
      await why(
        {AIRFLOW__OPENLINEAGE__EMISSION_POLICY: '[{"scope": {"dag_id": "etl"}, "controls": {"emit": false}}]'},
        {},
      ),
    ).toContain('emission_policy')
    expect(await why({}, {flags: {emit: false}})).toContain('_openlineage_emission_policy')
  })

  it('without a serialized DAG an operator rule cannot match; dag, task and global rules still apply', async () => {
    const settings = await lineageSettings(
      {lineage: true, delivery},
      {
        ...base,
        AIRFLOW__OPENLINEAGE__EMISSION_POLICY:
          '[{"scope": {"operator": ".*"}, "match_mode": "regex", "controls": {"emit": false}}, {"scope": {"dag_id": "etl"}, "controls": {"extract_operator_metadata": false}}]',
      },
      os.tmpdir(),
    )
    if (!settings.enabled) throw new Error('lineage is off')
    const decided = emissionByProvider({dagId: 'etl', taskId: 'load', declared: null}, settings.filters)
    expect(decided).toMatchObject({emit: true, extractOperatorMetadata: false})
  })
})

describe('reading the filters', () => {
  const base = {AIRFLOW_CONFIG: '/nonexistent/airflow.cfg', OPENLINEAGE_URL: 'http://ol:5000'}

  it('from AIRFLOW__OPENLINEAGE__*, as the provider reads [openlineage]', async () => {
    const settings = await lineageSettings(
      {lineage: true, delivery},
      {
        ...base,
        AIRFLOW__OPENLINEAGE__DISABLED_FOR_OPERATORS: ' a.B ; c.D;',
        AIRFLOW__OPENLINEAGE__SELECTIVE_ENABLE: 'True',
      },
      os.tmpdir(),
    )
    expect(settings).toMatchObject({filters: {disabledOperators: ['a.B', 'c.D'], selectiveEnable: true}})
    expect(await lineageSettings({lineage: true, delivery}, base, os.tmpdir())).toMatchObject({
      filters: {disabledOperators: [], selectiveEnable: false, emissionPolicy: []},
      warnings: [],
    })
  })

  it('emission_policy: each rule the provider ignores, and a value that is not a JSON array, is said before the run', async () => {
    const read = (value: string) =>
      lineageSettings({lineage: true, delivery}, {...base, AIRFLOW__OPENLINEAGE__EMISSION_POLICY: value}, os.tmpdir())
    const mixed = await read(
      '[{"scope": {}, "controls": {"emit": false}}, {"scope": {"task_id": "t"}, "controls": {"emit": false}}, 7]',
    )
    expect(mixed).toMatchObject({filters: {emissionPolicy: [{scope: {}, controls: {emit: false}}]}})
    const warnings = lineageWarnings(mixed)
    expect(warnings).toHaveLength(2)
    expect(warnings[0]).toContain('AIRFLOW__OPENLINEAGE__EMISSION_POLICY) rule 2 is ignored')
    expect(warnings[1]).toContain('rule 3 is ignored')
    for (const bad of ['[{', '{"scope": {}}']) {
      const settings = await read(bad)
      expect(settings).toMatchObject({filters: {emissionPolicy: null}})
      expect(lineageWarnings(settings).join()).toContain('default controls')
    }
    expect(await read('')).toMatchObject({filters: {emissionPolicy: []}, warnings: []})
  })

  it('a regex JavaScript cannot compile (here a possessive quantifier, Python 3.11+) is exit 2', async () => {
    const message = await lineageSettings(
      {lineage: true, delivery},
      {
        ...base,
        AIRFLOW__OPENLINEAGE__EMISSION_POLICY:
          '[{"scope": {"dag_id": "etl_\\\\w++"}, "match_mode": "regex", "controls": {"emit": false}}]',
      },
      os.tmpdir(),
    ).then(
      () => 'accepted',
      (error: unknown) =>
        usageMessage(() => {
          throw error
        }),
    )
    expect(message).toContain('scope.dag_id')
  })

  it('a selective_enable Airflow would refuse is exit 2', async () => {
    const message = await lineageSettings(
      {lineage: true, delivery},
      {...base, AIRFLOW__OPENLINEAGE__SELECTIVE_ENABLE: 'maybe'},
      os.tmpdir(),
    ).then(
      () => 'accepted',
      (error: unknown) =>
        usageMessage(() => {
          throw error
        }),
    )
    expect(message).toContain('[openlineage] selective_enable')
  })
})
