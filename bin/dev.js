#!/usr/bin/env node
// Development entry: the compiled commands with oclif's development mode (debug output, stack
// traces on internal errors). Keep `npm run build -- --watch` running beside it.
import {execute} from '@oclif/core'

await execute({development: true, dir: import.meta.url})
setTimeout(() => process.exit(), 2000).unref()
