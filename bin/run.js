#!/usr/bin/env node
// Production entry: runs the compiled commands in dist/ (built by `npm run build`, which `npm ci`
// runs through the prepare script).
import {execute} from '@oclif/core'

await execute({dir: import.meta.url})
// Every command closes its pools; this only guards a cron job against a stray handle keeping the
// process alive after the result was printed. unref(): it never delays a clean exit.
setTimeout(() => process.exit(), 2000).unref()
