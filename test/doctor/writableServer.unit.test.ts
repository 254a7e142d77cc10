import {describe, expect, it} from 'vitest'

import {whyReadOnly} from '../../src/doctor/writableServer.js'
import type {WriteAccess} from '../../src/store/families/catalog.js'

const writable: WriteAccess = {
  readOnly: false,
  inRecovery: false,
  defaultReadOnly: false,
  defaultReadOnlySource: 'default',
}

/**
 * Why a server accepts no writes, by what PostgreSQL reports. The standby cannot be built on the
 * test server (test/failures/readOnlyServer.test.ts covers a database set read-only), so its
 * branch is held here.
 */
describe('whyReadOnly', () => {
  it('a server that accepts writes has no reason', () => {
    expect(whyReadOnly(writable)).toBeUndefined()
    // default_transaction_read_only off but a session's own SET is not what a new transaction gets.
    expect(whyReadOnly({...writable, defaultReadOnly: true})).toBeUndefined()
  })

  it('a hot standby is named as one, whatever default_transaction_read_only says', () => {
    for (const defaultReadOnly of [false, true]) {
      const why = whyReadOnly({readOnly: true, inRecovery: true, defaultReadOnly, defaultReadOnlySource: 'database'})
      expect(why).toMatch(/^it is a hot standby \(pg_is_in_recovery\(\) is true\)/)
      expect(why).toContain('an address that a failover moved to one')
      expect(why).not.toContain('default_transaction_read_only')
    }
  })

  it.each([
    ['database', 'set for this database: ALTER DATABASE … SET'],
    ['user', 'set for this role: ALTER ROLE … SET'],
    ['database user', 'set for this role in this database: ALTER ROLE … IN DATABASE … SET'],
    ['configuration file', 'set in the server configuration: postgresql.conf or ALTER SYSTEM'],
    ['client', "set by this connection: the URL's options or PGOPTIONS"],
    ['environment variable', 'source: environment variable'],
  ])('default_transaction_read_only from %s says where it was set', (source, where) => {
    expect(whyReadOnly({readOnly: true, inRecovery: false, defaultReadOnly: true, defaultReadOnlySource: source})).toBe(
      `default_transaction_read_only is on (${where}), so every transaction begins read-only`,
    )
  })

  it('read-only for neither reason PostgreSQL reports: something in front of it', () => {
    expect(whyReadOnly({...writable, readOnly: true})).toContain('a read-only pooler or proxy in front of it?')
  })
})
