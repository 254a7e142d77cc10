import fs from 'node:fs/promises'
import path from 'node:path'

import type {Knex} from 'knex'

/**
 * A plain pg_dump of a fresh Airflow 3.0.0 metadata database, named by AIRLOCK_AIRFLOW_DUMP. The
 * repository does not ship one; without it the tests that restore it skip themselves by name.
 */
export const airflowDumpPath = process.env.AIRLOCK_AIRFLOW_DUMP ? path.resolve(process.env.AIRLOCK_AIRFLOW_DUMP) : ''

export async function dumpAvailable(): Promise<boolean> {
  if (!airflowDumpPath) return false
  return fs.access(airflowDumpPath).then(
    () => true,
    () => false,
  )
}

/**
 * Restores a plain-format pg_dump with node-postgres alone (psql is not on a machine that has only
 * Node): statements run as they are; COPY … FROM stdin blocks become parameterised INSERTs.
 */
export async function restoreDump(knex: Knex, file = airflowDumpPath): Promise<void> {
  const lines = (await fs.readFile(file, 'utf8')).split('\n')
  await knex.transaction(async (trx) => {
    let statement = ''
    for (let index = 0; index < lines.length; index++) {
      const line = lines[index]!
      if (statement === '' && (line.startsWith('--') || line.trim() === '')) continue
      const copy = /^COPY (\S+) \((.+)\) FROM stdin;$/.exec(line)
      if (copy) {
        const rows: string[][] = []
        while (lines[++index] !== '\\.') rows.push(lines[index]!.split('\t').map(unescapeCopy) as string[])
        for (const row of rows) {
          const placeholders = row.map(() => '?').join(', ')
          await trx.raw(`insert into ${copy[1]} (${copy[2]}) values (${placeholders})`, row)
        }

        continue
      }

      statement += line + '\n'
      if (line.trimEnd().endsWith(';')) {
        // pg_dump empties search_path; keep it so later statements in this session still resolve.
        if (!/set_config\('search_path'/.test(statement)) await trx.raw(statement.replaceAll('?', '\\?'))
        statement = ''
      }
    }
  })
}

function unescapeCopy(field: string): string | null {
  if (field === '\\N') return null
  return field.replace(/\\(.)/g, (_, char: string) => ({t: '\t', n: '\n', r: '\r', '\\': '\\'})[char] ?? char)
}
