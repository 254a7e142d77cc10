import type {Knex} from 'knex'

/**
 * A table's definition as the catalog states it, one line per column, constraint and index, so
 * two databases can be compared line by line. Column lines carry position, type (with length),
 * nullability and default; constraints their full definition (keys, references, ON DELETE /
 * ON UPDATE); indexes their full CREATE INDEX text.
 */
export async function describeTable(knex: Knex, table: string): Promise<string[]> {
  const {rows: columns} = await knex.raw<{rows: Array<{line: string}>}>(
    `select format('column %s #%s %s %s default %s', a.attname,
                   row_number() over (order by a.attnum), format_type(a.atttypid, a.atttypmod),
                   case when a.attnotnull then 'not null' else 'null' end,
                   coalesce(pg_get_expr(d.adbin, d.adrelid), '-')) as line
       from pg_attribute a
       left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
      where a.attrelid = format('public.%I', ?::text)::regclass and a.attnum > 0 and not a.attisdropped
      order by a.attnum`,
    [table],
  )
  const {rows: constraints} = await knex.raw<{rows: Array<{line: string}>}>(
    `select format('constraint %s %s', conname, pg_get_constraintdef(oid)) as line
       from pg_constraint where conrelid = format('public.%I', ?::text)::regclass order by conname`,
    [table],
  )
  const {rows: indexes} = await knex.raw<{rows: Array<{line: string}>}>(
    `select format('index %s', indexdef) as line from pg_indexes where schemaname = 'public' and tablename = ? order by indexname`,
    [table],
  )
  return [...columns, ...constraints, ...indexes].map((row) => row.line)
}

export async function publicTables(knex: Knex): Promise<string[]> {
  const {rows} = await knex.raw<{rows: Array<{tablename: string}>}>(
    `select tablename from pg_tables where schemaname = 'public' order by tablename`,
  )
  return rows.map((row) => row.tablename)
}
