// Loaded with `node --import`: marks the moment the CLI starts to load a module whose URL contains
// AIRLOCK_SIGNAL_AT, which bin/run.js reaches only after its first line (its signal handlers).
// AIRLOCK_SIGNAL_ACTION says what happens then: `kill` sends the process a SIGINT, `announce`
// writes a line to fd 3 for the test to signal when it likes (test/cli/earlySignal.test.ts). The
// load hook runs on the loader thread while the main thread awaits the import.
import {register} from 'node:module'
import process from 'node:process'

const at = process.env.AIRLOCK_SIGNAL_AT
const action = process.env.AIRLOCK_SIGNAL_ACTION ?? 'kill'
if (!at) throw new Error('signalAt.mjs: set AIRLOCK_SIGNAL_AT to a part of a module URL')

register('./signalAtHooks.mjs', import.meta.url, {data: {at, action}})
