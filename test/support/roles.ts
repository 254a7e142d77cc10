import {randomBytes} from 'node:crypto'

import type {TestDatabase} from './database.js'

/** A login role that may connect and SELECT every table of the test database, nothing more. */
export interface ReadOnlyRole {
  name: string
  /** The test database's URL, logged in as this role. */
  url: string
  /** Ends its sessions and drops it (roles are the server's, not the database's). */
  drop(): Promise<void>
}

export async function createReadOnlyRole(db: TestDatabase, prefix = 'airlock_reader'): Promise<ReadOnlyRole> {
  const name = `${prefix}_${randomBytes(3).toString('hex')}`
  const password = `${prefix}-pass`
  await db.knex.raw(`create role ?? login password '${password}'`, [name])
  await db.knex.raw(`grant connect on database ?? to ??`, [db.name, name])
  await db.knex.raw(`grant usage on schema public to ??`, [name])
  await db.knex.raw(`grant select on all tables in schema public to ??`, [name])
  const url = new URL(db.url)
  url.username = name
  url.password = password
  return {
    name,
    url: url.toString(),
    async drop() {
      await db.knex.raw(`select pg_terminate_backend(pid) from pg_stat_activity where usename = ?`, [name])
      await db.knex.raw('drop owned by ??', [name])
      await db.knex.raw(`revoke connect on database ?? from ??`, [db.name, name])
      await db.knex.raw('drop role if exists ??', [name])
    },
  }
}
