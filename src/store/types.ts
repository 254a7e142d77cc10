import type {Capabilities} from '../airflow/schema.js'

/** The release a store was built for: what its callers' rules (not its SQL) still depend on. */
export interface StoreCapabilities {
  /**
   * What the database's release does, for the registration rules that decide which rows to write
   * (partition keys per event, the missing-key log row); the SQL itself is chosen here, once.
   */
  readonly capabilities: Capabilities
}

/** The event filters of export-events and audit-events. */
export interface EventFilter {
  since?: Date | undefined
  until?: Date | undefined
  sourceDagId?: string | undefined
  /** Asset names or uris. */
  assets: readonly string[]
}

/** The key by which assets are matched across databases: name and uri together. */
export const assetKey = (asset: {name: string; uri: string}) => `${asset.name}\u0000${asset.uri}`
