import type {Knex} from 'knex'

import {lineOf, versionOfRevision} from '../airflow/revisions.js'
import {fixtureVersions, type FixtureVersion} from './fixtureSchema.js'

/**
 * What the DAG processor of an Airflow release line writes differently for the same DAG file,
 * where a world writes the DAG processor's rows itself (src/worlds/seed.ts). The judge lane
 * (test/judge/seed.judge.test.ts) parses the seed's world as DAG files with each release and
 * compares.
 */
export interface SerializedShape {
  /**
   * serialized_dag.data's `__version`: `SerializedDAG.SERIALIZER_VERSION`
   * (airflow/serialization/serialized_objects.py), 2 in 3.0, 3 from 3.1.0 (its `client_defaults`).
   * Version 1 is Airflow 2's format: the loader converts it as one (`conversion_v1_to_v2`).
   */
  format: 2 | 3
  /**
   * The expression of `schedule="@daily"`'s CronTriggerTimetable: the task SDK 1.2 of the 3.2 line
   * keeps the preset as written (airflow/sdk/definitions/timetables/trigger.py, encoded by
   * airflow/serialization/encoders.py); 3.0 and 3.1 (core's timetable) and the SDK 1.3 of 3.3
   * (`CRON_PRESETS`, _cron.py) write the cron expression it stands for.
   */
  daily: string
  /**
   * The `group` column of an alias row a DAG declares: `AssetAliasModel.from_public`
   * (airflow/models/asset.py, 3.0 and 3.1) sets the name alone, leaving the column's default '';
   * `from_serialized` (3.2+) sets the group too. The serialized DAG carries the group either way.
   */
  aliasRowGroup: (declared: string) => string
}

const withoutGroup = () => ''
const withGroup = (declared: string) => declared

const shapes: Record<FixtureVersion, SerializedShape> = {
  '3.0': {format: 2, daily: '0 0 * * *', aliasRowGroup: withoutGroup},
  '3.1': {format: 3, daily: '0 0 * * *', aliasRowGroup: withoutGroup},
  '3.2': {format: 3, daily: '@daily', aliasRowGroup: withGroup},
  '3.3': {format: 3, daily: '0 0 * * *', aliasRowGroup: withGroup},
  // No 3.4 release to parse with yet: 3.3's shape, which main's serializer still writes.
  '3.4': {format: 3, daily: '0 0 * * *', aliasRowGroup: withGroup},
}

/**
 * The shape for the database's release line, placed by its alembic head (a fixture build stamps
 * its line's); the newest line's when the head is not one airlock knows.
 */
export async function readSerializedShape(knex: Knex): Promise<SerializedShape> {
  const {rows: present} = await knex.raw<{rows: Array<{present: boolean}>}>(
    `select to_regclass('alembic_version') is not null as present`,
  )
  const {rows} = present[0]?.present
    ? await knex.raw<{rows: Array<{head: string}>}>('select version_num as head from alembic_version limit 1')
    : {rows: []}
  const version = rows[0] ? versionOfRevision(rows[0].head) : undefined
  const line = version === undefined ? undefined : (lineOf(version) as FixtureVersion)
  return shapes[line !== undefined && fixtureVersions.includes(line) ? line : fixtureVersions.at(-1)!]
}
