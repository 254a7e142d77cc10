/**
 * Whether a text sets a colour or a style: an SGR escape sequence, ESC [ <numbers> m. Cursor
 * movements and line clearing (what a spinner or a prompt redraws with) are not colour.
 */
export function hasColour(text: string): boolean {
  return text
    .split('\u001B[')
    .slice(1)
    .some((sequence) => /^[0-9;]*m/.test(sequence))
}
