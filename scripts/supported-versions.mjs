#!/usr/bin/env node
// Writes docs/supported-versions.md from the built revision graph (npm run docs:versions builds first).
import {writeFileSync} from 'node:fs'

import {renderSupportedVersionsPage} from '../dist/src/airflow/supportedVersionsPage.js'

writeFileSync(new URL('../docs/supported-versions.md', import.meta.url), renderSupportedVersionsPage())
console.log('wrote docs/supported-versions.md')
