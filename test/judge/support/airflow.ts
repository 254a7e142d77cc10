import {execFile} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {promisify} from 'node:util'

import {lineOf} from '../../../src/airflow/revisions.js'
import type {FixtureVersion} from '../../../src/worlds/fixtureSchema.js'

const run = promisify(execFile)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
const harnessFile = path.join(root, 'test/judge/harness.py')
export const dagsFolder = path.join(root, 'test/judge/dags')
/** DAG files with partitioned timetables, which only 3.2+ can parse. */
export const partitionedDagsFolder = path.join(root, 'test/judge/dags-partitioned')

/** One Airflow release the lane runs, as scripts/airflow/releases.tsv lists it. */
export interface Release {
  version: string
  taskSdk: string
  released: string
  line: FixtureVersion
  /** Its virtual environment (scripts/airflow/install.sh). */
  venv: string
  installed: boolean
}

export const airflowCache = (): string =>
  process.env.AIRLOCK_AIRFLOW_CACHE ??
  path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'airlock/airflow')

export function releases(): Release[] {
  const lines = fs.readFileSync(path.join(root, 'scripts/airflow/releases.tsv'), 'utf8').split('\n')
  return lines
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => {
      const [version, taskSdk, released] = line.split('\t') as [string, string, string]
      const venv = path.join(airflowCache(), version)
      return {
        version,
        taskSdk,
        released,
        line: lineOf(version) as FixtureVersion,
        venv,
        installed: fs.existsSync(path.join(venv, '.airlock-requirements')),
      }
    })
}

/** The releases installed here; the lane says which are missing and why rather than failing on them. */
export const installedReleases = (): Release[] => releases().filter((release) => release.installed)

/** SQLAlchemy's form of a postgres:// URL, for Airflow's [database] sql_alchemy_conn. */
export const sqlAlchemyUrl = (url: string): string => url.replace(/^postgres(ql)?:\/\//, 'postgresql+psycopg2://')

const airflowHome = fs.mkdtempSync(path.join(os.tmpdir(), 'airlock-judge-home-'))

/** Airflow's settings for one database: no examples, DAGs unpaused at creation, our DAG files. */
export function airflowEnvironment(databaseUrl: string, dags = dagsFolder): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    AIRFLOW_HOME: airflowHome,
    AIRFLOW__DATABASE__SQL_ALCHEMY_CONN: sqlAlchemyUrl(databaseUrl),
    AIRFLOW__CORE__DAGS_FOLDER: dags,
    AIRFLOW__CORE__LOAD_EXAMPLES: 'False',
    AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION: 'False',
    AIRFLOW__CORE__UNIT_TEST_MODE: 'False',
    PYTHONWARNINGS: 'ignore',
    PYTHONDONTWRITEBYTECODE: '1',
  }
}

/** `airflow db migrate` of the release on an empty database: the schema a fresh install of it has. */
export async function migrate(release: Release, databaseUrl: string): Promise<void> {
  try {
    await run(path.join(release.venv, 'bin/airflow'), ['db', 'migrate'], {
      env: airflowEnvironment(databaseUrl),
      maxBuffer: 64 * 1024 * 1024,
    })
  } catch (error) {
    throw new Error(
      `airflow ${release.version} db migrate failed: ${(error as {stderr?: string}).stderr ?? String(error)}`,
    )
  }
}

export type Step =
  | {op: 'reserialize'}
  | {op: 'trigger'; dag: string; run_id: string; partition_key?: string}
  | {op: 'start' | 'succeed'; dag: string; run_id: string; task: string; emit?: Emission[]}
  | {op: 'states'; dag: string; run_id: string; states: Record<string, string>; run_state?: string}
  | {op: 'mark_success'; dag: string; run_id: string; task: string}
  | {op: 'schedule'}
  | {op: 'version'}
  | {op: 'load_serialized'; file: string}

/** What a task records in its outlet_events accessors (harness.py says how each becomes the payload). */
export interface Emission {
  asset: string
  uri?: string
  extra?: Record<string, unknown>
  alias?: string
}

export interface ScheduledRun {
  dag_id: string
  run_id: string
  run_type: string
  run_after: string | null
  partition_key: string | null
  event_ids: number[]
}

/** Runs the steps with the release's own Python and Airflow (test/judge/harness.py); one result per step. */
export async function harness(
  release: Release,
  databaseUrl: string,
  steps: Step[],
  dags = dagsFolder,
): Promise<Array<Record<string, unknown>>> {
  try {
    const {stdout} = await run(path.join(release.venv, 'bin/python'), [harnessFile, JSON.stringify(steps)], {
      env: airflowEnvironment(databaseUrl, dags),
      maxBuffer: 64 * 1024 * 1024,
    })
    return JSON.parse(stdout.trimEnd().split('\n').at(-1)!) as Array<Record<string, unknown>>
  } catch (error) {
    const stderr = (error as {stderr?: string}).stderr ?? ''
    throw new Error(`Airflow ${release.version} harness failed on ${JSON.stringify(steps)}:\n${stderr.slice(-4000)}`)
  }
}

/** One pass of the release's DAG-run creation on the database: the runs it created. */
export async function schedule(release: Release, databaseUrl: string, dags = dagsFolder): Promise<ScheduledRun[]> {
  const [result] = (await harness(release, databaseUrl, [{op: 'schedule'}], dags)) as [{runs: ScheduledRun[]}]
  return result.runs
}
