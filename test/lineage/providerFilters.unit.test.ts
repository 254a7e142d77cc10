import os from 'node:os'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {skippedByProvider} from '../../src/lineage/lineage.js'
import {lineageSettings} from '../../src/lineage/settings.js'
import {declaredJob} from '../../src/store/postgres/lineage.js'
import {usageMessage} from '../support/usage.js'

/** Where a run's spool is and how long it waits: the command's flags give these. */
const delivery = {spoolDir: path.join(os.tmpdir(), 'airlock-test-spool'), waitMs: 30_000, required: false}

/**
 * The provider's filters on task events, as airlock reads and applies them: a task whose operator
 * is in `[openlineage] disabled_for_operators`, or (with `selective_enable`) one that did not enable
 * lineage, gets no COMPLETE from the provider's listener, so none from airlock.
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
})

describe('skippedByProvider (plugins/listener.py _on_task_instance_success)', () => {
  const declared = (operatorClass: string | null, selectiveEnable: boolean | null) => ({
    ...declaredJob({dag: {tasks: [op({task_id: 't'})]}}, 't')!,
    operatorClass,
    selectiveEnable,
  })
  const off = {disabledOperators: [], selectiveEnable: false}

  it('sends by default', () => {
    expect(skippedByProvider(declared('a.B', null), off)).toBeUndefined()
    expect(skippedByProvider(null, off)).toBeUndefined()
  })

  it('skips an operator listed in disabled_for_operators, by its full class name', () => {
    const filters = {disabledOperators: ['a.B', 'c.D'], selectiveEnable: false}
    expect(skippedByProvider(declared('a.B', null), filters)).toContain('disabled_for_operators')
    expect(skippedByProvider(declared('x.B', null), filters)).toBeUndefined()
  })

  it('with selective_enable, sends only for a task that enabled lineage (explicitly true)', () => {
    const filters = {disabledOperators: [], selectiveEnable: true}
    expect(skippedByProvider(declared('a.B', true), filters)).toBeUndefined()
    expect(skippedByProvider(declared('a.B', false), filters)).toContain('selective_enable')
    expect(skippedByProvider(declared('a.B', null), filters)).toContain('selective_enable')
    expect(skippedByProvider(null, filters)).toContain('selective_enable')
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
      filters: {disabledOperators: [], selectiveEnable: false},
    })
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
