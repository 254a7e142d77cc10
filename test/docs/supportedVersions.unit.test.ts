import {readFile} from 'node:fs/promises'

import {describe, expect, it} from 'vitest'

import {releases, revisions} from '../../src/airflow/revisions.js'
import {renderSupportedVersionsPage} from '../../src/airflow/supportedVersionsPage.js'

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

  it('places every patch release of every 3.x line, and 3.4.0 from main as unreleased', () => {
    const versions = releases.map((r) => r.version)
    for (const expected of ['3.0.0', '3.0.3', '3.0.6', '3.1.0', '3.1.7', '3.1.8', '3.2.0', '3.2.2', '3.3.0', '3.3.2'])
      expect(versions).toContain(expected)
    expect(releases.find((r) => r.version === '3.4.0')).toMatchObject({unreleased: true, head: 'ee86eed19e24'})
    expect(releases.filter((r) => r.unreleased).map((r) => r.version)).toEqual(['3.4.0'])
  })
})
