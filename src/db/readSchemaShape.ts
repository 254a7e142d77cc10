import type {Knex} from 'knex'

/** table name → its column names, for the public schema's tables airlock cares about. */
export type SchemaShape = Map<string, Set<string>>

export async function readSchemaShape(db: Knex | Knex.Transaction, tables: readonly string[]): Promise<SchemaShape> {
  const {rows} = await db.raw<{rows: Array<{table_name: string; column_name: string}>}>(
    `select table_name, column_name
       from information_schema.columns
      where table_schema = 'public' and table_name = any(?)
      order by table_name, ordinal_position`,
    [[...tables]],
  )
  const shape: SchemaShape = new Map()
  for (const row of rows) {
    const columns = shape.get(row.table_name) ?? new Set<string>()
    columns.add(row.column_name)
    shape.set(row.table_name, columns)
  }

  return shape
}
