/**
 * Airflow releases newer than what airlock supports, as their own documentation shows them. A
 * database at one of their migrations is refused by name (exit 8) before anything is read: their
 * tables are not those of airlock's graph (revisions.json), and what airlock would have to write
 * there is not mirrored yet.
 *
 * Only rows read in the release's own migration reference are listed, newest first. The page
 * (https://airflow.apache.org/docs/apache-airflow/3.4.0/migrations-ref.html) could be read only up
 * to its seventh row: the rest of 3.4.0's chain, and so whether the development migrations airlock
 * places after 3.3.0 (5a5d3253e946 … b2f1a9c7d4e0, 3c525f44bea8) are in 3.4.0 and where, is not
 * established.
 */
export interface NewerRelease {
  version: string
  /** The release's date, from its release notes. */
  date: string
  /** Where the migration reference and the release date were read (the release's own documentation). */
  sources: readonly string[]
  /** What the release changes that airlock does not mirror, as the refusal says it ("it …"). */
  changes: string
  /**
   * Release-tied rows of its migration chain, the head first. `downRevision` is as the page shows
   * it: the last row's is cut off there (a prefix ending in '…').
   */
  chain: ReadonlyArray<{revision: string; downRevision: string; description: string}>
  /**
   * A column whose presence says the tables are this release's (or past it): no release airlock
   * supports has it. Read with the shape, where a head sits both on airlock's graph and in this
   * chain (ee86eed19e24).
   */
  marker: {table: string; column: string; why: string}
}

export const newerReleases: readonly NewerRelease[] = [
  {
    version: '3.4.0',
    date: '2026-11-06',
    sources: [
      'https://airflow.apache.org/docs/apache-airflow/3.4.0/migrations-ref.html',
      'https://airflow.apache.org/docs/apache-airflow/3.4.0/release_notes.html',
    ],
    changes:
      'adds task loops (AIP-111): it renames the stored map index to region_index, attributes log rows and ' +
      'asset events to the exact task try and stores new XComs in an xcom_v2 table (its migration reference ' +
      'and release notes); copies of main from before the release also fold task_instance_history into ' +
      'task_instance and run loop gates on success, which can turn a success into a retry or a failure',
    chain: [
      {revision: 'b4f1a7d2c903', downRevision: 'ee86eed19e24', description: 'Add is_stub to task_instance.'},
      {
        revision: 'ee86eed19e24',
        downRevision: '9cffe90fa0c0',
        description: 'Add pending_partition_key to asset_partition_dag_run and enforce single pending row per key.',
      },
      {
        revision: '9cffe90fa0c0',
        downRevision: 'a5d7b9c13e40',
        description: 'Add commit_allows_update to connection_test_request.',
      },
      {
        revision: 'a5d7b9c13e40',
        downRevision: 'c3e7a9182f64',
        description: 'Preserve exact task execution attribution in asset state.',
      },
      {
        revision: 'c3e7a9182f64',
        downRevision: '7f8c9a2d410e',
        description: 'Attribute log and asset events to exact task tries.',
      },
      {
        revision: '7f8c9a2d410e',
        downRevision: '54a27b6f9d01',
        description: 'Rename the stored map index to region_index and add the dynamic region slot key.',
      },
      {
        // The page is cut inside this row: its parent shows as "e7c2a9", its description not at
        // all. (A stored copy of the file names e7c2a91bd540 and "Add dynamic region storage.",
        // but copies from before a rebase are not evidence of the release's order.)
        revision: '54a27b6f9d01',
        downRevision: 'e7c2a9…',
        description: '(cut off)',
      },
    ],
    marker: {
      table: 'task_instance',
      column: 'region_index',
      why: '3.4.0 renames the stored map index to region_index (7f8c9a2d410e)',
    },
  },
]

export interface NewerReleaseMigration {
  release: NewerRelease
  /** True for the release's own head; false for a migration below it (an upgrade that stopped). */
  isHead: boolean
}

/** The newer release a revision is a row of, if any (only rows the page shows whole). */
export function newerReleaseOf(revision: string): NewerReleaseMigration | undefined {
  for (const release of newerReleases) {
    if (release.chain.some((row) => row.revision === revision))
      return {release, isHead: release.chain[0]!.revision === revision}
  }

  return undefined
}

/** The newer release whose line is `line` ('3.4'), for a message about --assume-version. */
export const newerReleaseOfLine = (line: string): NewerRelease | undefined =>
  newerReleases.find((release) => release.version.startsWith(`${line}.`))

/** The refusal's words: which release, released when, and what airlock does not mirror. */
export function newerReleaseReason(revision: string, found: NewerReleaseMigration, supported: string): string {
  const {release, isHead} = found
  const where = isHead ? `the head of Airflow ${release.version}` : `a migration of Airflow ${release.version}`
  const stopped = isHead ? '' : ' (an upgrade to it that stopped part-way)'
  return (
    `alembic head ${revision} is ${where}${stopped}, released ${release.date}, which this airlock does not ` +
    `support yet (it supports ${supported}). Airflow ${release.version} ${release.changes}; airlock does not ` +
    `mirror that, so it writes nothing here`
  )
}
