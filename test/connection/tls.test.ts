import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {haveOpenssl, startTlsServer, tlsServerBinaries, type TlsServer} from '../support/tlsServer.js'

/**
 * TLS as libpq means it, against real PostgreSQL servers started here with ssl=on and a
 * self-signed certificate made by openssl: the embedded server, and the machine's PostgreSQL 15
 * binaries when installed. The servers hold no Airflow schema, so a connection that works ends
 * in exit 8 from doctor, and one that does not in exit 7; doctor's server.tls says whether the
 * session is encrypted.
 */
interface DoctorOut {
  status: number
  result?: {server: {tls: string | null}}
  error?: {code: string; message: string; actions: string[]}
}

const doctor = async (url: string, env: Record<string, string> = {}) => {
  const result = await runCli(['doctor', '--json'], {env: {AIRLOCK_DATABASE_URL: url, ...env}})
  return {code: result.code, out: envelope(result) as unknown as DoctorOut}
}

const withQuery = (url: string, query: string) => `${url}${url.includes('?') ? '&' : '?'}${query}`

const binaries = (await haveOpenssl()) ? await tlsServerBinaries() : []

/** A name /etc/hosts gives 127.0.0.1 besides localhost (the test certificate names only localhost and 127.0.0.1). */
const otherLoopbackName = await fs
  .readFile('/etc/hosts', 'utf8')
  .then((hosts) =>
    hosts
      .split('\n')
      .map((line) => line.replace(/#.*/, '').trim().split(/\s+/))
      .filter(([address]) => address === '127.0.0.1')
      .flatMap(([, ...names]) => names)
      .find((name) => name !== 'localhost' && !name.startsWith('localhost.')),
  )
  .catch(() => undefined)

describe.skipIf(binaries.length === 0)('TLS', () => {
  for (const server of binaries) {
    describe(`PostgreSQL ${server.version} with ssl=on and a self-signed certificate`, () => {
      let tls: TlsServer
      beforeAll(async () => {
        tls = await startTlsServer(server)
      }, 120_000)
      afterAll(async () => tls?.stop())

      it('sslmode=require encrypts without verifying (a self-signed server is fine), as psql does', async () => {
        const {code, out} = await doctor(withQuery(tls.url, 'sslmode=require'))
        expect(code).toBe(8)
        expect(out.result!.server.tls).toMatch(/^TLSv1\.[23]$/)
      })

      it('the default (prefer) encrypts when the server offers TLS; disable does not', async () => {
        expect((await doctor(tls.url)).out.result!.server.tls).toMatch(/^TLSv1/)
        expect((await doctor(withQuery(tls.url, 'sslmode=disable'))).out.result!.server.tls).toBeNull()
      })

      it('verify-full without the CA: exit 7, the verification failure named, sslrootcert suggested', async () => {
        const {code, out} = await doctor(withQuery(tls.url, 'sslmode=verify-full'))
        expect(code).toBe(7)
        expect(out.error!.message).toContain('could not be verified')
        expect(out.error!.actions.join(' ')).toContain('sslrootcert')
      })

      it('verify-full and verify-ca with the CA connect, by IP address and by host name', async () => {
        for (const query of [
          `sslmode=verify-full&sslrootcert=${tls.certFile}`,
          `sslmode=verify-ca&sslrootcert=${tls.certFile}`,
        ]) {
          expect((await doctor(withQuery(tls.url, query))).out.result!.server.tls).toMatch(/^TLSv1/)
          expect(
            (await doctor(withQuery(tls.url.replace('127.0.0.1', 'localhost'), query))).out.result!.server.tls,
          ).toMatch(/^TLSv1/)
        }
      })

      it.skipIf(!otherLoopbackName)(
        'verify-full with the right CA but a host name the certificate does not list: the mismatch named, not "pass the CA"',
        async () => {
          const query = `sslmode=verify-full&sslrootcert=${tls.certFile}`
          const url = withQuery(tls.url.replace('127.0.0.1', otherLoopbackName!), query)
          const {code, out} = await doctor(url)
          expect(code).toBe(7)
          expect(out.error!.message).toContain('does not name the host connected to')
          expect(out.error!.message).toContain(otherLoopbackName)
          expect(out.error!.actions.join(' ')).not.toContain('Pass the CA')
          expect(out.error!.actions.join(' ')).toContain('verify-ca')
          // verify-ca with the same CA connects: the certificate itself is fine.
          expect((await doctor(url.replace('verify-full', 'verify-ca'))).out.result!.server.tls).toMatch(/^TLSv1/)
        },
      )

      it('a CA that did not sign the certificate fails verification, also under require (libpq then verifies as verify-ca)', async () => {
        for (const mode of ['verify-ca', 'require']) {
          const {code, out} = await doctor(withQuery(tls.url, `sslmode=${mode}&sslrootcert=${tls.otherCertFile}`))
          expect(code, mode).toBe(7)
          expect(out.error!.code).toBe('DATABASE_UNREACHABLE')
        }
      })

      it("libpq's variables and Airflow's SQLAlchemy URL carry the same settings", async () => {
        const byEnvironment = await doctor(tls.url, {PGSSLMODE: 'verify-full', PGSSLROOTCERT: tls.certFile})
        expect(byEnvironment.out.result!.server.tls).toMatch(/^TLSv1/)
        const sqlalchemy = withQuery(tls.url.replace(/^postgresql:/, 'postgresql+psycopg2:'), 'sslmode=require')
        const result = await runCli(['doctor', '--json'], {env: {AIRFLOW__DATABASE__SQL_ALCHEMY_CONN: sqlalchemy}})
        expect((envelope(result) as unknown as DoctorOut).result!.server.tls).toMatch(/^TLSv1/)
      })

      it('a password from ~/.pgpass (PGPASSFILE) or PGPASSWORD, never needed in the URL; a world-readable file is ignored, as libpq does', async () => {
        const parsed = new URL(tls.url)
        const password = decodeURIComponent(parsed.password)
        parsed.password = ''
        const bare = parsed.toString()
        const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-pgpass-'))
        try {
          const file = path.join(dir, 'pgpass')
          await fs.writeFile(
            file,
            `# airlock test\nother:5432:*:*:wrong\n127.0.0.1:${parsed.port}:*:postgres:${password.replace(/[:\\]/g, '\\$&')}\n`,
            {mode: 0o600},
          )
          const fromFile = await runCli(['doctor', '--json'], {env: {AIRLOCK_DATABASE_URL: bare, PGPASSFILE: file}})
          expect(fromFile.code).toBe(8)
          expect(fromFile.stderr).not.toContain('DeprecationWarning')
          const fromVariable = await runCli(['doctor', '--json'], {
            env: {AIRLOCK_DATABASE_URL: bare, PGPASSWORD: password},
          })
          expect(fromVariable.code).toBe(8)

          await fs.chmod(file, 0o644)
          const readable = await runCli(['doctor'], {env: {AIRLOCK_DATABASE_URL: bare, PGPASSFILE: file}})
          expect(readable.code).toBe(7)
          expect(readable.stderr).toContain('readable by group or others')
          expect(readable.stderr).toContain('the server asks for a password and none was given')
          expect(readable.stderr).toContain('~/.pgpass')
        } finally {
          await fs.rm(dir, {recursive: true, force: true})
        }
      })

      it('a missing sslrootcert file is a usage error naming it (exit 2)', async () => {
        const {code, out} = await doctor(withQuery(tls.url, 'sslmode=verify-full&sslrootcert=/nonexistent/ca.crt'))
        expect(code).toBe(2)
        expect(out.error!.message).toContain('/nonexistent/ca.crt does not exist')
      })
    })
  }
})

describe('TLS against a server without it', () => {
  let db: TestDatabase
  let serverHasTls = false
  beforeAll(async () => {
    db = await createTestDatabase('empty', 1)
    serverHasTls = (await db.knex.raw<{rows: Array<{ssl: string}>}>('show ssl')).rows[0]!.ssl === 'on'
  })
  afterAll(async () => db?.drop())

  it('sslmode=require is exit 7, saying the server does not offer TLS; prefer falls back to plain', async () => {
    // A test server with TLS of its own (a container image may have it) cannot show this.
    if (serverHasTls) return
    const required = await doctor(withQuery(db.url, 'sslmode=require'))
    expect(required.code).toBe(7)
    expect(required.out.error!.message).toContain('does not offer TLS')
    const preferred = await doctor(db.url)
    expect(preferred.code).toBe(8)
    expect(preferred.out.result!.server.tls).toBeNull()
  })
})
