import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {
  AirflowConfigError,
  clearStateOnSuccessOption,
  multiTeamOption,
  readAirflowSetting,
  readAirflowString,
} from '../../src/airflow/config.js'

/** Airflow's settings as Airflow reads them: its variable, then airflow.cfg, then the default. */
let dir: string
beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-airflow-cfg-'))
})
afterAll(async () => fs.rm(dir, {recursive: true, force: true}))

const cfg = async (name: string, text: string) => {
  const file = path.join(dir, name)
  await fs.writeFile(file, text)
  return file
}

describe('readAirflowSetting', () => {
  it('the variable wins over the file; the file over the default; each says where it came from', async () => {
    const file = await cfg('a.cfg', '[core]\nmulti_team = True\n')
    expect(readAirflowSetting(multiTeamOption, {AIRFLOW_CONFIG: file, AIRFLOW__CORE__MULTI_TEAM: 'false'})).toEqual({
      value: false,
      source: 'AIRFLOW__CORE__MULTI_TEAM',
    })
    expect(readAirflowSetting(multiTeamOption, {AIRFLOW_CONFIG: file})).toEqual({value: true, source: file})
    const none = readAirflowSetting(multiTeamOption, {AIRFLOW_CONFIG: path.join(dir, 'missing.cfg')})
    expect(none.value).toBe(false)
    expect(none.source).toContain("Airflow's default")
  })

  it('AIRFLOW_HOME/airflow.cfg when AIRFLOW_CONFIG is not set; sections and keys as configparser reads them', async () => {
    await cfg(
      'airflow.cfg',
      '# comment\n[core]\nmulti_team = False\n\n[state_store]\nClear_On_Success: t  # on\n[other]\nclear_on_success = f\n',
    )
    expect(readAirflowSetting(clearStateOnSuccessOption, {AIRFLOW_HOME: dir})).toEqual({
      value: true,
      source: path.join(dir, 'airflow.cfg'),
    })
    expect(readAirflowSetting(multiTeamOption, {AIRFLOW_HOME: dir}).value).toBe(false)
  })

  it('a value Airflow would refuse is refused, naming where it is', async () => {
    expect(() => readAirflowSetting(multiTeamOption, {AIRFLOW__CORE__MULTI_TEAM: 'yes'})).toThrow(AirflowConfigError)
    expect(() => readAirflowSetting(multiTeamOption, {AIRFLOW__CORE__MULTI_TEAM: 'yes'})).toThrow(
      /AIRFLOW__CORE__MULTI_TEAM is "yes"/,
    )
    const file = await cfg('bad.cfg', '[core]\nmulti_team = on\n')
    expect(() => readAirflowSetting(multiTeamOption, {AIRFLOW_CONFIG: file})).toThrow(/in .*bad\.cfg/)
  })
})

describe('readAirflowString', () => {
  it("a multi-line value as configparser joins it (expected: Python's configparser.ConfigParser().get on the same text)", async () => {
    const file = await cfg(
      'multi.cfg',
      '[openlineage]\nemission_policy = [\n    {"scope": {}, "controls": {"emit": false}},\n# a comment\n\n' +
        '    {"scope": {"dag_id": "etl"}, "controls": {"emit": true}}\n  ]\nnamespace = prod\n  \n' +
        '[core]\nemission_policy = not this one\n',
    )
    expect(readAirflowString('openlineage', 'emission_policy', {AIRFLOW_CONFIG: file})).toEqual({
      value:
        '[\n{"scope": {}, "controls": {"emit": false}},\n\n{"scope": {"dag_id": "etl"}, "controls": {"emit": true}}\n]',
      source: file,
    })
    expect(readAirflowString('openlineage', 'namespace', {AIRFLOW_CONFIG: file})?.value).toBe('prod')
  })
})
