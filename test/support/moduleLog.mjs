// Loaded with `node --import`: writes the URL of every module the process loads, one a line, to the
// file named by AIRLOCK_MODULE_LOG (test/cli/startup.test.ts reads it). ES modules come through a
// load hook, which runs on the loader thread and appends each URL before the module loads;
// CommonJS modules from require's cache at exit, as Node 20's hooks do not see require() calls.
import {appendFileSync} from 'node:fs'
import {createRequire, register} from 'node:module'
import process from 'node:process'
import {pathToFileURL} from 'node:url'

const file = process.env.AIRLOCK_MODULE_LOG
if (!file) throw new Error('moduleLog.mjs: set AIRLOCK_MODULE_LOG to the file to write')

register('./moduleLogHooks.mjs', import.meta.url, {data: {file}})

const require = createRequire(import.meta.url)
process.on('exit', () => {
  const loaded = Object.keys(require.cache).map((path) => `${pathToFileURL(path).href}\n`)
  appendFileSync(file, loaded.join(''))
})
