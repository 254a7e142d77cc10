import {serializedDagJson, UnreadableSerializedDag} from '../../airflow/serializedDag.js'
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
