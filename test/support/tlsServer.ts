import {execFile} from 'node:child_process'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'

import {locateBinaries, serverUser, type Binaries} from '../../src/sandbox/cluster.js'
import {startThrowawayCluster} from './testServer.js'

const execFileAsync = promisify(execFile)

export interface TlsServer {
  /** The server's version, for the test name. */
  version: string
  /** postgresql://postgres:…@127.0.0.1:port/postgres, without TLS parameters. */
  url: string
  /** The self-signed certificate the server presents (its own CA), for sslrootcert. */
  certFile: string
  /** A certificate made the same way that did not sign the server's: verification must fail with it. */
  otherCertFile: string
  stop(): Promise<void>
}

/** The PostgreSQL binaries a TLS test server can run on: the embedded ones, and the machine's 15 when installed. */
export async function tlsServerBinaries(): Promise<Binaries[]> {
  const found = [await locateBinaries(serverUser())]
  const system = '/usr/lib/postgresql/15/bin'
  if (await fs.stat(path.join(system, 'postgres')).catch(() => undefined)) {
    found.push({
      pgCtl: path.join(system, 'pg_ctl'),
      initdb: path.join(system, 'initdb'),
      postgres: path.join(system, 'postgres'),
      version: '15',
    })
  }

  return found
}

/** Whether `openssl` is on the PATH (it makes the self-signed certificates). */
export async function haveOpenssl(): Promise<boolean> {
  return execFileAsync('openssl', ['version']).then(
    () => true,
    () => false,
  )
}

/**
 * A throwaway PostgreSQL cluster with ssl=on and a self-signed certificate for localhost and
 * 127.0.0.1, made here with openssl. It accepts both plain and TLS connections.
 */
export async function startTlsServer(binaries: Binaries): Promise<TlsServer> {
  const certs = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-tls-certs-'))
  const make = async (name: string) => {
    await execFileAsync('openssl', [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      path.join(certs, `${name}.key`),
      '-out',
      path.join(certs, `${name}.crt`),
    ])
  }
  await make('server')
  await make('other')
  const cluster = await startThrowawayCluster(binaries, async (clusterDir, user) => {
    // The server reads its key and certificate as its own user, and refuses a key others can read.
    const keyFile = path.join(clusterDir, 'server.key')
    const certFile = path.join(clusterDir, 'server.crt')
    await fs.copyFile(path.join(certs, 'server.key'), keyFile)
    await fs.copyFile(path.join(certs, 'server.crt'), certFile)
    await fs.chmod(keyFile, 0o600)
    if (user) {
      await fs.chown(keyFile, user.uid, user.gid)
      await fs.chown(certFile, user.uid, user.gid)
    }

    return ['ssl=on', `ssl_cert_file=${certFile}`, `ssl_key_file=${keyFile}`]
  })
  return {
    version: binaries.version,
    url: cluster.url,
    certFile: path.join(certs, 'server.crt'),
    otherCertFile: path.join(certs, 'other.crt'),
    stop: async () => {
      await cluster.stop()
      await fs.rm(certs, {recursive: true, force: true})
    },
  }
}
