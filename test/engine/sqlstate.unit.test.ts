import {describe, expect, it} from 'vitest'

import {classifyPostgresError, SqlState} from '../../src/engine/postgres/sqlstate.js'

/** A server error as node-postgres raises it: its SQLSTATE in `code`, its severity. */
const serverError = (code: string, severity = 'ERROR') => Object.assign(new Error('from the server'), {code, severity})

describe('classifyPostgresError', () => {
  it('a write refused by a read-only server (25006) is read_only: not retried, not a lost session', () => {
    expect(SqlState.readOnlySqlTransaction).toBe('25006')
    expect(classifyPostgresError(serverError('25006'))).toEqual({kind: 'read_only', code: '25006'})
  })

  it('its class neighbours keep their own meaning', () => {
    // 25P03: idle_in_transaction_session_timeout ended the session.
    expect(classifyPostgresError(serverError('25P03', 'FATAL'))).toMatchObject({
      kind: 'unreachable',
      connectionLost: true,
    })
    expect(classifyPostgresError(serverError('25001'))).toEqual({kind: 'other', code: '25001'})
  })
})
