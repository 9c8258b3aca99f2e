import { hexDump, textFromBytes } from './bytes';

/** How a value is shown: JSON pretty-printed, plain text, or a hex dump of binary bytes. */
export type ValueView =
  | { kind: 'json'; text: string }
  | { kind: 'text'; text: string }
  | { kind: 'binary'; text: string };

/** The kind of a value in words, for its label. */
export const VALUE_KIND_LABEL = { json: 'JSON', text: 'text', binary: 'binary (hex)' } as const;

export function viewValue(bytes: Uint8Array): ValueView {
  const text = textFromBytes(bytes);
  if (text === null) return { kind: 'binary', text: hexDump(bytes) };
  const trimmed = text.trim();
  // Only objects and arrays count as JSON: "42" or "true" read better as the text they are.
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      return { kind: 'json', text: JSON.stringify(JSON.parse(trimmed), null, 2) };
    } catch {
      // Looks like JSON but is not: show it as written.
    }
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000e-\u001f\u007f]/.test(text)) return { kind: 'binary', text: hexDump(bytes) };
  return { kind: 'text', text };
}
