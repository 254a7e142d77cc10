import type {Executor} from '../../engine/engine.js'
import {prepared} from '../../engine/prepared.js'
import {serializedDagJson, UnreadableSerializedDag, versionDag, type VersionDag} from '../../airflow/serializedDag.js'
import {unsupportedSchemaError} from '../../errors.js'

/**
 * A serialized_dag row's DAG for the readers that cannot go on without it (the protocol's read,
 * clear, lineage, the downstream preview): a payload that is not zlib or not JSON is exit 8 naming
 * the column, not a bug in airlock.
 */
export function storedDagJson(data: unknown, compressed: Buffer | null): unknown {
  try {
    return serializedDagJson(data, compressed)
  } catch (error) {
    if (error instanceof UnreadableSerializedDag)
      throw unsupportedSchemaError(`A serialized DAG could not be read (${error.message}).`)
    throw error
  }
}

/**
 * The serialized DAGs of DAG versions, one VersionDag per id in order (none stored, or unreadable,
 * said rather than thrown): parsed here, since `data_compressed` is zlib, which SQL cannot read.
 * What the audit's duplicates and --fix's recheck read a try's declared outlets from.
 */
export function readVersionDags() {
  const read = prepared(
    'serialized_dags_of_versions',
    'select dag_version_id::text as id, data, data_compressed from serialized_dag where dag_version_id = any($1::uuid[])',
  )
  return async (ex: Executor, ids: readonly string[]): Promise<VersionDag[]> => {
    const rows = await ex.query<{id: string; data: unknown; data_compressed: Buffer | null}>(read([[...ids]]))
    return ids.map((id) =>
      versionDag(
        id,
        rows.find((row) => row.id === id),
      ),
    )
  }
}
