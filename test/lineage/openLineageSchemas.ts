import {readFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {Ajv2020} from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import {expect} from 'vitest'

/**
 * OpenLineage's published JSON schemas (test/fixtures/openlineage/, see its README), registered
 * for the events airlock builds: the RunEvent of spec 2-0-2 and every facet schema an event names
 * in its `_schemaURL`.
 *
 * Four facet files are the text stored at the commits the README names, whose own `$id` is not
 * the published URL openlineage-python's facet classes name: each is registered under that URL,
 * and its base-facet `$ref` (to the RunFacet / JobFacet of an older OpenLineage.json) is resolved
 * against 2-0-2, whose BaseFacet requires the same `_producer` and `_schemaURL`.
 */
const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'openlineage')

const publishedAs: Record<string, string> = {
  'NominalTimeRunFacet.json': 'https://openlineage.io/spec/facets/1-0-1/NominalTimeRunFacet.json',
  'OwnershipJobFacet.json': 'https://openlineage.io/spec/facets/1-0-1/OwnershipJobFacet.json',
  'DocumentationJobFacet.json': 'https://openlineage.io/spec/facets/1-1-0/DocumentationJobFacet.json',
  'TagsJobFacet.json': 'https://openlineage.io/spec/facets/1-0-0/TagsJobFacet.json',
}

const asIs = ['OpenLineage.json', 'ParentRunFacet.json', 'JobTypeJobFacet.json', 'ProcessingEngineRunFacet.json']

export function openLineageSchemas() {
  const ajv = new Ajv2020({strict: false})
  addFormats.default(ajv)
  const read = (file: string) => readFileSync(path.join(fixtures, file), 'utf8')
  for (const file of asIs) ajv.addSchema(JSON.parse(read(file)) as object)
  for (const [file, url] of Object.entries(publishedAs)) {
    const text = read(file).replace(
      /https:\/\/openlineage\.io\/spec\/\d+-\d+-\d+\/OpenLineage\.json#/g,
      'https://openlineage.io/spec/2-0-2/OpenLineage.json#',
    )
    ajv.addSchema({...(JSON.parse(text) as object), $id: url})
  }
  const validateRunEvent = ajv.compile({$ref: 'https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent'})

  /** The event against the RunEvent schema, and every facet it carries against its own schema. */
  function expectValid(event: Record<string, unknown>): void {
    expect(validateRunEvent(event), JSON.stringify(validateRunEvent.errors)).toBe(true)
    const run = event.run as {facets: Record<string, {_schemaURL: string}>}
    const job = event.job as {facets: Record<string, {_schemaURL: string}>}
    for (const facet of [...Object.values(run.facets), ...Object.values(job.facets)]) {
      const check = ajv.getSchema(facet._schemaURL)
      expect(check, `no schema registered for ${facet._schemaURL}`).toBeDefined()
      expect(check!(facet), `${facet._schemaURL}: ${JSON.stringify(check!.errors)}`).toBe(true)
    }
  }

  return {expectValid}
}
