import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/**
 * Airflow's own configuration, read the way Airflow reads it for the options that change what a
 * success writes (`AirflowConfigParser.get` and `getboolean`,
 * airflow-core/src/airflow/configuration.py): the environment variable `AIRFLOW__{SECTION}__{KEY}`
 * first, then `airflow.cfg` (`AIRFLOW_CONFIG`, else `$AIRFLOW_HOME/airflow.cfg`, `AIRFLOW_HOME`
 * defaulting to `~/airflow`), then the option's default. airlock runs where the operator runs it,
 * so the environment and file it sees are the operator's: export the deployment's settings (or
 * point AIRFLOW_CONFIG at its airflow.cfg) when they differ. `_CMD` and `_SECRET` variants apply
 * to sensitive options only in Airflow, and none of these is one.
 */
export interface AirflowSetting {
  value: boolean
  /** Where the value came from, for doctor: the variable, the file, or the default. */
  source: string
}

/** An Airflow option airlock reads, with its default in Airflow's config.yml. */
export interface AirflowOption {
  section: string
  key: string
  default: boolean
}

/** `[core] multi_team` (default False): `AssetManager._filter_dags_by_team` runs only when it is true. */
export const multiTeamOption: AirflowOption = {section: 'core', key: 'multi_team', default: false}

/** `[state_store] clear_on_success` (3.3+, apache/airflow #66586, default False). */
export const clearStateOnSuccessOption: AirflowOption = {
  section: 'state_store',
  key: 'clear_on_success',
  default: false,
}

/**
 * The worker-side task state backend (3.3+, apache/airflow #66859): a class on the workers that
 * keeps the task state's payloads in its own storage, the `task_state_store` row holding only a
 * reference. 3.3.0–3.3.2 read `[workers] state_store_backend` (their config.yml, and the task SDK's
 * `_get_worker_state_store_backend`); `state_backend`, the name #66859 first proposed, is in no
 * release but is still read after it, as an operator may have set it from that pull request.
 */
export const workerStateBackendOptions = [
  {section: 'workers', key: 'state_store_backend'},
  {section: 'workers', key: 'state_backend'},
] as const

/** A string option that is set, the option it was read as, and where it was found. */
export interface AirflowStringSetting {
  value: string
  option: string
  source: string
}

/**
 * The worker-side task state backend class as Airflow reads it (`conf.get("workers", …, fallback="")`:
 * empty means none), or undefined when neither name is set.
 */
export function readWorkerStateBackend(env: NodeJS.ProcessEnv = process.env): AirflowStringSetting | undefined {
  for (const {section, key} of workerStateBackendOptions) {
    const found = readAirflowString(section, key, env)
    if (found !== undefined && found.value.trim() !== '')
      return {value: found.value.trim(), option: `[${section}] ${key}`, source: found.source}
  }

  return undefined
}

export class AirflowConfigError extends Error {}

export function readAirflowSetting(option: AirflowOption, env: NodeJS.ProcessEnv = process.env): AirflowSetting {
  const variable = `AIRFLOW__${option.section.toUpperCase().replaceAll('.', '_')}__${option.key.toUpperCase()}`
  const fromEnv = env[variable]
  if (fromEnv !== undefined) return {value: parseBoolean(fromEnv, variable), source: variable}
  const file = configFile(env)
  const fromFile = readOption(file, option)
  if (fromFile !== undefined)
    return {value: parseBoolean(fromFile, `[${option.section}] ${option.key} in ${file}`), source: file}
  return {value: option.default, source: `Airflow's default (not in ${variable} or ${file})`}
}

/**
 * A string option as Airflow's `conf.get(section, key, fallback="")` reads it: the
 * `AIRFLOW__SECTION__KEY` variable, then airflow.cfg, else undefined (the caller's fallback).
 */
export function readAirflowString(
  section: string,
  key: string,
  env: NodeJS.ProcessEnv = process.env,
): {value: string; source: string} | undefined {
  const variable = `AIRFLOW__${section.toUpperCase().replaceAll('.', '_')}__${key.toUpperCase()}`
  const fromEnv = env[variable]
  if (fromEnv !== undefined) return {value: fromEnv, source: variable}
  const file = configFile(env)
  const fromFile = readOption(file, {section, key, default: false})
  return fromFile === undefined ? undefined : {value: fromFile, source: file}
}

function configFile(env: NodeJS.ProcessEnv): string {
  if (env.AIRFLOW_CONFIG) return expandHome(env.AIRFLOW_CONFIG)
  return path.join(expandHome(env.AIRFLOW_HOME ?? '~/airflow'), 'airflow.cfg')
}

const expandHome = (p: string) => (p === '~' || p.startsWith('~/') ? path.join(os.homedir(), p.slice(1)) : p)

/** `getboolean`: lower-cased, stripped, an inline `#` comment dropped; t/true/1 or f/false/0, anything else refused. */
export function parseBoolean(raw: string, where: string): boolean {
  let value = raw.toLowerCase().trim()
  if (value.includes('#')) value = value.split('#')[0]!.trim()
  if (['t', 'true', '1'].includes(value)) return true
  if (['f', 'false', '0'].includes(value)) return false
  throw new AirflowConfigError(
    `${where} is ${JSON.stringify(raw)}, which Airflow does not read as a boolean (true/t/1 or false/f/0); Airflow itself refuses to start with it`,
  )
}

/** The option's raw value in an INI file as configparser reads it (keys case-insensitive, `=` or `:`), or undefined. */
function readOption(file: string, option: AirflowOption): string | undefined {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new AirflowConfigError(
      `${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    )
  }

  let section: string | undefined
  let found: string[] | undefined
  // configparser's multi-line values: a line indented deeper than its key continues the key's
  // value (joined with newlines, the end stripped); an empty line inside it is kept, a comment
  // line is not. Only the option asked for is collected.
  let collecting: {indent: number; lines: string[]} | undefined
  for (const line of text.split(/\r?\n/)) {
    const trimmed = line.trim()
    if (trimmed.startsWith('#') || trimmed.startsWith(';')) continue
    if (trimmed === '') {
      collecting?.lines.push('')
      continue
    }
    const indent = line.length - line.trimStart().length
    if (collecting && indent > collecting.indent) {
      collecting.lines.push(trimmed)
      continue
    }
    collecting = undefined
    const header = /^\[(.+)\]$/.exec(trimmed)
    if (header) {
      section = header[1]!.trim()
      continue
    }
    if (section !== option.section || indent > 0) continue
    const match = /^([^=:]+)[=:](.*)$/.exec(trimmed)
    if (match && match[1]!.trim().toLowerCase() === option.key) {
      found = [match[2]!.trim()]
      collecting = {indent, lines: found}
    }
  }

  return found?.join('\n').trimEnd()
}

/** A number option, the value Airflow reads and where it came from. */
export interface AirflowNumberSetting {
  value: number
  /** `[section] key`, as Airflow's docs name it. */
  option: string
  source: string
}

/**
 * A number option as `conf.getint` (`int(value)`: an integer, else Airflow refuses it) or
 * `conf.getfloat` reads it: the variable, then airflow.cfg, else `fallback` (the option's default
 * in Airflow's config.yml).
 */
export function readAirflowNumber(
  section: string,
  key: string,
  kind: 'int' | 'float',
  fallback: number,
  env: NodeJS.ProcessEnv = process.env,
): AirflowNumberSetting {
  const option = `[${section}] ${key}`
  const found = readAirflowString(section, key, env)
  if (found === undefined) return {value: fallback, option, source: "Airflow's default"}
  const raw = found.value.trim()
  const value =
    kind === 'int' ? (/^[+-]?\d+$/.test(raw) ? Number(raw) : Number.NaN) : raw === '' ? Number.NaN : Number(raw)
  if (!Number.isFinite(value))
    throw new AirflowConfigError(
      `${option} in ${found.source} is ${JSON.stringify(found.value)}, which Airflow does not read as ${kind === 'int' ? 'an integer' : 'a number'}`,
    )
  return {value, option, source: found.source}
}
