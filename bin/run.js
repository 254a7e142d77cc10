#!/usr/bin/env node
// Production entry: runs the compiled commands in dist/ (built by `npm run build`, which `npm ci`
// runs through the prepare script).
//
// A signal that comes while oclif is still loading is remembered here, not obeyed: the command
// reports it as an interruption (exit 130, an envelope under --json) as soon as it starts.
const early = (signal) => {
  globalThis.airlockEarlySignal ??= signal
}
process.on('SIGINT', early)
process.on('SIGTERM', early)
globalThis.airlockReleaseEarlySignals = () => {
  process.off('SIGINT', early)
  process.off('SIGTERM', early)
}

const {execute} = await import('@oclif/core')

await execute({dir: import.meta.url})
// Every command closes its pools; this only guards a cron job against a stray handle keeping the
// process alive after the result was printed. unref(): it never delays a clean exit.
setTimeout(() => process.exit(), 2000).unref()
