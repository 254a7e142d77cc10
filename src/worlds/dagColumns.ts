import type {Knex} from 'knex'

/**
 * The class of a DAG's timetable as the DAG processor names it in `dag.timetable_type`
 * (`Timetable.type_name`: a built-in timetable's class name): `CronTriggerTimetable` for
 * `schedule="@daily"` (Airflow 3's default, `[scheduler] create_cron_data_intervals` off),
 * `AssetTriggeredTimetable` for a schedule on assets, `NullTimetable` for `schedule=None`.
 */
export type TimetableType = 'CronTriggerTimetable' | 'AssetTriggeredTimetable' | 'NullTimetable'

/** Timetables whose `periodic` is false (airflow/timetables/simple.py, `_TrivialTimetable`). */
const nonPeriodic: readonly TimetableType[] = ['AssetTriggeredTimetable', 'NullTimetable']

/**
 * dag columns added after 3.0 that the DAG processor writes for every DAG
 * (`DagModelOperation.update_dags`, airflow/dag_processing/collection.py) and a world or test
 * writing a dag row must fill too: NOT NULL without a default, or written with a value the
 * default does not give. Each is written only where the fixture has it (the writers run on
 * every fixture version, 3.0 to 3.4), with what Airflow writes for a DAG without partition mappers.
 */
const laterColumns: ReadonlyArray<{
  column: string
  value: (type: TimetableType) => unknown
  sql: (type: string) => string
}> = [
  // 0100_3_2_0_add_timetable_type_to_dag_table_for_.py: NOT NULL, no default.
  {column: 'timetable_type', value: (type) => type, sql: (type) => type},
  // 0111_3_3_0_add_timetable_periodic_to_dag.py: default false, true for a cron schedule.
  {
    column: 'timetable_periodic',
    value: (type) => !nonPeriodic.includes(type),
    sql: (type) => `(${type}) not in (${nonPeriodic.map((t) => `'${t}'`).join(', ')})`,
  },
  // 0120_3_3_0_add_partition_mapper_info_to_dag.py: NOT NULL, no default; [] without mappers.
  {column: 'partition_mapper_info', value: () => '[]', sql: () => `'[]'::json`},
]

export interface DagColumns {
  /** `, timetable_type, …`: the later columns this database has, for an INSERT's column list. */
  names: string
  /** The matching `, value, …` for its SELECT, from a SQL expression giving the TimetableType. */
  values(type: string): string
  /** The same columns and values for a row object (a knex insert). */
  row(type: TimetableType): Record<string, unknown>
}

/** Which of the later dag columns the database has, and how to fill them. */
export async function readDagColumns(knex: Knex): Promise<DagColumns> {
  const {rows} = await knex.raw<{rows: Array<{column_name: string}>}>(
    `select column_name from information_schema.columns where table_schema = current_schema() and table_name = 'dag'`,
  )
  const present = new Set(rows.map((row) => row.column_name))
  const columns = laterColumns.filter(({column}) => present.has(column))
  return {
    names: columns.map(({column}) => `, ${column}`).join(''),
    values: (type) => columns.map(({sql}) => `, ${sql(type)}`).join(''),
    row: (type) => Object.fromEntries(columns.map(({column, value}) => [column, value(type)])),
  }
}
