/**
 * The command line that takes up a batch the server cut short: the same command, since every
 * writer rechecks under its lock (what committed reads already_success, or is no longer
 * selected) and a replay's --checkpoint resumes after the last item it recorded. Printed with
 * the operator's own words, quoted for a POSIX shell (the caller scrubs its secrets).
 */
export function resumeCommand(bin: string, commandId: string, argv: readonly string[]): string {
  return [bin, ...commandId.split(':'), ...argv].map(shellWord).join(' ')
}

const plainWord = /^[\w@%+=:,./-]+$/

const shellWord = (word: string): string => (plainWord.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`)
