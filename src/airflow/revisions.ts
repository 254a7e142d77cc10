import graph from './revisions.json' with {type: 'json'}

/**
 * Airflow's migration graph from 3.0.0's head onward, and the head of every release, as
 * scripts/refresh-airflow-revisions.mjs generated them from Airflow's own migration reference
 * (airflow-core/docs/migrations-ref.rst) and release notes. airlock places the alembic head it
 * finds on this graph; what each placement means for the tables is in schema.ts.
 */
export interface Revision {
  revision: string
  downRevision: string | null
  /** The Airflow version whose upgrade applies this migration (the migration file's `airflow_version`). */
  airflowVersion: string
  description: string
  /** Set when the migration sits here on a release branch only (a backport; main may hold the same id elsewhere). */
  branch?: string
}

export interface Release {
  version: string
  date: string | null
  head: string
  unreleased?: boolean
}

export const revisions: readonly Revision[] = graph.revisions
export const releases: readonly Release[] = graph.releases
const olderRevisions: Readonly<Record<string, string>> = graph.olderRevisions

/** The Airflow version of a revision before 3.0.0's head (Airflow 2, or an unfinished upgrade to 3.0.0). */
export function olderRevisionVersion(head: string): string | undefined {
  return olderRevisions[head]
}

/** Where a head sits: which release(s) it is the head of, and every migration applied to reach it. */
export interface Placement {
  head: string
  /** What doctor shows: '3.0.3–3.0.6', '3.1.8 (partly migrated)', '3.4.0 development (main at dd3e57b)', '3.3.x (assumed)'. */
  release: string
  /** The release whose behaviour airlock follows: the first release with this head, or the migration's version. */
  version: string
  /**
   * `development`: a build no release carries, whole (main's head at the graph's commit, or a
   * migration backported to a release branch after that line's last release).
   */
  kind: 'release' | 'partly_migrated' | 'assumed' | 'development'
  /** Revision ids from 3.0.0's head up to and including the head. */
  applied: ReadonlySet<string>
}

export const lineOf = (version: string): string => version.split('.').slice(0, 2).join('.')

export function compareVersions(a: string, b: string): number {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number))
  for (let i = 0; i < 3; i++) if ((x![i] ?? 0) !== (y![i] ?? 0)) return (x![i] ?? 0) - (y![i] ?? 0)
  return 0
}

/** The release lines airlock knows (3.0, 3.1, …), oldest first. */
export const releaseLines: readonly string[] = [...new Set(releases.map((release) => lineOf(release.version)))]

/** The lines with a release, which `--assume-version` can name (not a development line such as 3.4). */
export const releasedLines: readonly string[] = [
  ...new Set(releases.filter((release) => !release.unreleased).map((release) => lineOf(release.version))),
]

function appliedUpTo(entry: Revision): Set<string> {
  const applied = new Set<string>()
  for (let at: Revision | undefined = entry; at;) {
    applied.add(at.revision)
    const parent: string | null = at.downRevision
    // A release branch's migration continues on its branch, then on main's chain.
    at =
      (entry.branch ? revisions.find((r) => r.revision === parent && r.branch === entry.branch) : undefined) ??
      revisions.find((r) => r.revision === parent && r.branch === undefined)
  }

  return applied
}

/** The entry a release's head is: its line's release-branch entry when there is one, else main's. */
function entryOf(release: Release): Revision | undefined {
  const line = lineOf(release.version)
  return (
    revisions.find((r) => r.revision === release.head && r.branch === line) ??
    revisions.find((r) => r.revision === release.head && r.branch === undefined)
  )
}

function releasesHeadedBy(entry: Revision): Release[] {
  return releases.filter((release) => entryOf(release) === entry)
}

/**
 * Main's development line at the commit the graph was read from: its version is the release it
 * was heading for, which may have shipped since with other migrations (3.4.0 did: newerReleases.ts).
 */
const developmentLabel = (version: string) => `${version} development (main at ${graph.source.commit.slice(0, 7)})`

function labelFor(headed: Release[]): string {
  const first = headed[0]!
  const last = headed.at(-1)!
  const span = first === last ? first.version : `${first.version}–${last.version}`
  return first.unreleased ? developmentLabel(span) : span
}

/**
 * Every place `head` sits on the graph: none for an unknown head, two when a backported migration
 * keeps its id on a release branch and on main (the tables tell them apart).
 */
export function placementsOf(head: string): Placement[] {
  return revisions.filter((entry) => entry.revision === head).map(placementOf)
}

/** Where one entry of the graph places a database whose head it is. */
export function placementOf(entry: Revision): Placement {
  const head = entry.revision
  const headed = releasesHeadedBy(entry)
  const applied = appliedUpTo(entry)
  if (headed.length > 0) {
    const kind = headed[0]!.unreleased ? 'development' : 'release'
    return {head, release: labelFor(headed), version: headed[0]!.version, kind, applied}
  }
  // A backport on a release branch: an upgrade that stopped short of a release of the line that
  // carries it, else a build of the branch past the line's last release airlock knows.
  if (entry.branch !== undefined) {
    const line = releases.filter((release) => lineOf(release.version) === entry.branch)
    const carriedBy = line.find((release) => appliedUpTo(entryOf(release)!).has(head))
    if (carriedBy !== undefined) {
      const release = `${carriedBy.version} (partly migrated)`
      return {head, release, version: carriedBy.version, kind: 'partly_migrated', applied}
    }
    const span = line.length > 1 ? `${line[0]!.version}–${line.at(-1)!.version}` : line[0]?.version
    const release = `${entry.branch} release branch, past ${line.at(-1)?.version ?? entry.branch} (in none of ${span})`
    return {head, release, version: entry.airflowVersion, kind: 'development', applied}
  }
  const unreleased = !releasedLines.includes(lineOf(entry.airflowVersion))
  return {
    head,
    release: unreleased
      ? `${developmentLabel(entry.airflowVersion)}, partly migrated`
      : `${entry.airflowVersion} (partly migrated)`,
    version: entry.airflowVersion,
    kind: 'partly_migrated',
    applied,
  }
}

/** Where a database at this release's head is placed (every release head is on the graph: the refresh script and a test see to it). */
export function releasePlacement(release: Release): Placement {
  return placementOf(entryOf(release)!)
}

/** The newest release of a released line, for `--assume-version X.Y` on a head newer than airlock. */
export function assumedPlacement(line: string, head: string): Placement | undefined {
  const newest = releases.filter((release) => lineOf(release.version) === line && !release.unreleased).at(-1)
  if (!newest) return undefined
  const {applied} = releasePlacement(newest)
  return {
    head,
    release: `${line}.x (assumed; newer than ${newest.version})`,
    version: newest.version,
    kind: 'assumed',
    applied,
  }
}

/** One placement per distinct release head, newest first: what an unknown head is compared with. */
export function releasePlacements(): Placement[] {
  const entries = new Set([...releases].reverse().map((release) => entryOf(release)!))
  return [...entries].map(placementOf)
}

/** The Airflow version a migration belongs to (main's entry when a revision sits in two places). */
export function versionOfRevision(revision: string): string | undefined {
  return (
    revisions.find((r) => r.revision === revision && r.branch === undefined) ??
    revisions.find((r) => r.revision === revision)
  )?.airflowVersion
}

const newestReleased = releases.filter((release) => !release.unreleased).at(-1)!
const unreleasedText = releases
  .filter((release) => release.unreleased)
  .map((release) => ` and ${developmentLabel(release.version)} up to ${release.head}`)

/** For messages: '3.0.x, 3.1.x, 3.2.x, 3.3.x (through 3.3.2) and 3.4.0 development (main at dd3e57b) up to ee86eed19e24'. */
export const supportedVersionsText = `${releaseLines
  .filter((line) => compareVersions(line, lineOf(newestReleased.version)) <= 0)
  .map((line) => `${line}.x`)
  .join(', ')} (through ${newestReleased.version})${unreleasedText.join('')}`
