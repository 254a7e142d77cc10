#!/usr/bin/env node
// Rewrites the generated blocks of the command pages in docs/ (each command's flags, exit codes
// and item outcomes) from oclif.manifest.json and the built outcome tables; npm run docs:commands
// builds first. The prose around the blocks is left as it is; test/docs/commandPages.test.ts fails
// while a page differs from what this writes.
import {readdirSync, readFileSync, writeFileSync} from 'node:fs'

import {renderCommandPage} from '../dist/src/cli/commandPages.js'

const docs = new URL('../docs/', import.meta.url)
const {commands} = JSON.parse(readFileSync(new URL('../oclif.manifest.json', import.meta.url), 'utf8'))
for (const name of readdirSync(docs)
  .filter((file) => file.endsWith('.md'))
  .sort()) {
  const file = new URL(name, docs)
  const page = readFileSync(file, 'utf8')
  const rendered = renderCommandPage(page, commands)
  if (rendered !== page) {
    writeFileSync(file, rendered)
    console.log(`wrote docs/${name}`)
  }
}
