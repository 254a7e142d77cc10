import {readFile} from 'node:fs/promises'

import {describe, expect, it} from 'vitest'

import {newerReleaseOf, newerReleases} from '../../src/airflow/newerReleases.js'
import {placementsOf, releases, revisions, supportedVersionsText} from '../../src/airflow/revisions.js'
import {renderSupportedVersionsPage} from '../../src/airflow/supportedVersionsPage.js'
import {unplacedRevisions} from '../../src/airflow/unplacedRevisions.js'

describe('the supported-versions page and the revision graph', () => {
  it('docs/supported-versions.md is what the graph renders (run npm run docs:versions after changing either)', async () => {
    const committed = await readFile(new URL('../../docs/supported-versions.md', import.meta.url), 'utf8')
    expect(committed).toBe(renderSupportedVersionsPage())
  })

  it("is one chain from 3.0.0's head, every migration's parent on it, and every release head on the graph", () => {
    const main = revisions.filter((r) => r.branch === undefined)
    expect(main[0]!.revision).toBe('29ce7909c52b')
    for (const [index, entry] of main.entries())
      if (index > 0) expect(entry.downRevision).toBe(main[index - 1]!.revision)
    for (const release of releases) expect(revisions.some((r) => r.revision === release.head)).toBe(true)
  })

  it("places every patch release of every 3.x line, and main's 3.4.0 development line apart from the release", () => {
    const versions = releases.map((r) => r.version)
    for (const expected of ['3.0.0', '3.0.3', '3.0.6', '3.1.0', '3.1.7', '3.1.8', '3.2.0', '3.2.2', '3.3.0', '3.3.2'])
      expect(versions).toContain(expected)
    expect(releases.find((r) => r.version === '3.4.0')).toMatchObject({unreleased: true, head: 'ee86eed19e24'})
    expect(releases.filter((r) => r.unreleased).map((r) => r.version)).toEqual(['3.4.0'])
    expect(supportedVersionsText).toBe(
      '3.0.x, 3.1.x, 3.2.x, 3.3.x (through 3.3.2) and 3.4.0 development (main at dd3e57b) up to ee86eed19e24',
    )
  })

  it("a release's own migration reference outranks the version rule: 3.3.1 and 3.3.2 end at 3.3.0's head", () => {
    for (const version of ['3.3.1', '3.3.2'])
      expect(releases.find((r) => r.version === version)?.head).toBe('d2f4e1b3c5a7')
    const [release] = placementsOf('d2f4e1b3c5a7')
    expect(release).toMatchObject({release: '3.3.0–3.3.2', kind: 'release', version: '3.3.0'})
    const branch = placementsOf('3c525f44bea8').find((p) => p.version === '3.3.1')
    // The v3-3-test backport labelled 3.3.1 reached none of 3.3.0–3.3.2: a build of that branch.
    expect(branch).toMatchObject({
      release: '3.3 release branch, past 3.3.2 (in none of 3.3.0–3.3.2)',
      kind: 'development',
    })
    expect(branch?.applied.has('b2f1a9c7d4e0')).toBe(false)
  })

  it("main's head at the graph's commit is a development build, not Airflow 3.4.0", () => {
    const [dev] = placementsOf('ee86eed19e24')
    expect(dev).toMatchObject({release: '3.4.0 development (main at dd3e57b)', kind: 'development', version: '3.4.0'})
    expect(placementsOf('b2f1a9c7d4e0')[0]).toMatchObject({
      release: '3.4.0 development (main at dd3e57b), partly migrated',
      kind: 'partly_migrated',
    })
  })

  it("knows Airflow 3.4.0's head and the rows of its chain its migration reference shows, none of them placed", () => {
    expect(newerReleaseOf('b4f1a7d2c903')).toMatchObject({
      release: {version: '3.4.0', date: '2026-11-06'},
      isHead: true,
    })
    for (const below of ['9cffe90fa0c0', 'a5d7b9c13e40', 'c3e7a9182f64', '7f8c9a2d410e', '54a27b6f9d01'])
      expect(newerReleaseOf(below), below).toMatchObject({release: {version: '3.4.0'}, isHead: false})
    // The page is cut inside 54a27b6f9d01's parent: a copy of a file is no evidence of the release's order.
    expect(newerReleaseOf('e7c2a91bd540')).toBeUndefined()
    expect(unplacedRevisions.e7c2a91bd540).toMatchObject({version: '3.4.0'})
    // ee86eed19e24 is in both: on the graph (main's development line) and in 3.4.0's chain.
    expect(newerReleaseOf('ee86eed19e24')?.isHead).toBe(false)
    expect(newerReleaseOf('d2f4e1b3c5a7')).toBeUndefined()
    // Only ee86eed19e24, which 3.4.0 re-parented, is on airlock's graph; a refresh that placed
    // another row (its head) would let a 3.4.0 database past the refusal before any read.
    for (const row of newerReleases[0]!.chain.filter((row) => row.revision !== 'ee86eed19e24'))
      expect(placementsOf(row.revision), row.revision).toEqual([])
    // Nor may a refresh list a newer release as one airlock places by the version rule.
    for (const newer of newerReleases)
      expect(releases.filter((r) => r.version === newer.version && !r.unreleased)).toEqual([])
    // A migration is either refused as a newer release's or as unplaced, never both.
    for (const row of newerReleases.flatMap((release) => release.chain))
      expect(Object.keys(unplacedRevisions)).not.toContain(row.revision)
  })
})
