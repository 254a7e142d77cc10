import {describe, expect, it} from 'vitest'

import {AirlockError} from '../../src/errors.js'
import {describeTarget, maskUrl, passwordOf, redact, toDatabaseUrl} from '../../src/connection/url.js'

describe('toDatabaseUrl', () => {
  it.each([
    ['postgresql+psycopg2://airflow:pw@db:5432/airflow', 'postgresql://airflow:pw@db:5432/airflow'],
    ['postgresql+asyncpg://airflow@db/airflow?sslmode=require', 'postgresql://airflow@db/airflow?sslmode=require'],
    ['postgres://u@h/d', 'postgresql://u@h/d'],
    ['  postgresql://u@h/d  ', 'postgresql://u@h/d'],
    ['POSTGRESQL+PSYCOPG2://u@h/d', 'postgresql://u@h/d'],
  ])('translates %s', (input, expected) => {
    expect(toDatabaseUrl(input, 'test')).toBe(expected)
  })

  it('refuses MySQL with exit 8 and a message naming the source', () => {
    const error = captureError(() =>
      toDatabaseUrl('mysql+mysqldb://u:secret@h/airflow', 'AIRFLOW__DATABASE__SQL_ALCHEMY_CONN'),
    )
    expect(error.exit).toBe(8)
    expect(error.message).toContain('AIRFLOW__DATABASE__SQL_ALCHEMY_CONN')
    expect(error.message).not.toContain('secret')
  })

  it('refuses a URL broken by an unescaped character in its password, without echoing it', () => {
    const error = captureError(() => toDatabaseUrl('postgresql://airflow:pa/ss#w@db/airflow', '--database-url'))
    expect(error.exit).toBe(2)
    expect(error.message).toContain('percent-encode')
    expect(error.message).not.toContain('pa/ss')
    expect(describeTarget('postgresql://airflow:pa/ss#w@db/airflow')).toBe('(unparseable URL)')
  })

  it.each([
    ['user name', 'postgresql://po%zzstgres@127.0.0.1:5432/x'],
    ['password', 'postgresql://airflow:s3cr%t@db/airflow'],
    ['database name', 'postgresql://airflow@db/air%flow'],
    ['query string', 'postgresql://airflow@db/airflow?application_name=a%zb'],
  ])('refuses a malformed percent-escape in the %s with exit 2, naming the part, never echoing it', (part, url) => {
    const error = captureError(() => toDatabaseUrl(url, '--database-url'))
    expect(error.exit).toBe(2)
    expect(error.message).toContain(`the ${part} holds a malformed percent-escape`)
    expect(error.message).not.toContain('s3cr')
  })

  it('refuses a non-URL with exit 2 without echoing its password', () => {
    const error = captureError(() => toDatabaseUrl('sqlite:////tmp/x.db', '--database-url'))
    expect(error.exit).toBe(2)
    const noScheme = captureError(() => toDatabaseUrl('user:hunter22@host/db', '--database-url'))
    expect(noScheme.exit).toBe(2)
    expect(noScheme.message).not.toContain('hunter22')
  })
})

describe('password masking', () => {
  it('masks the password in the authority and in the query string', () => {
    expect(maskUrl('postgresql://airflow:s3cr:et@db:5432/airflow')).toBe('postgresql://airflow:***@db:5432/airflow')
    expect(maskUrl('postgresql://airflow@db/airflow?password=s3cret&sslmode=require')).toBe(
      'postgresql://airflow@db/airflow?password=***&sslmode=require',
    )
    expect(maskUrl('postgresql://airflow@db/airflow')).toBe('postgresql://airflow@db/airflow')
  })

  it('finds the decoded password and scrubs both its forms from any text', () => {
    const url = 'postgresql://airflow:p%40ss%20word@db/airflow'
    expect(passwordOf(url)).toBe('p@ss word')
    expect(redact('failed for p@ss word and p%40ss%20word', ['p@ss word'])).toBe('failed for *** and ***')
  })

  it('describes a target without user or password', () => {
    expect(describeTarget('postgresql://airflow:pw@db.internal:6543/meta')).toBe('db.internal:6543/meta')
    expect(describeTarget('postgresql://airflow:pw@db/meta')).toBe('db:5432/meta')
  })
})

function captureError(fn: () => unknown): AirlockError {
  try {
    fn()
  } catch (error) {
    if (error instanceof AirlockError) return error
    throw error
  }

  throw new Error('expected an AirlockError')
}
