// Keys and values are byte strings. The console always asks the API for base64, so
// no byte is ever lost to a lossy UTF-8 round trip, and decides here how to show them.

export function bytesFromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function base64FromBytes(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export function bytesFromText(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

/** The bytes as UTF-8 text, or null when they are not valid UTF-8. */
export function textFromBytes(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** The path segment of a key: every byte that is not unreserved is percent-encoded. */
export function keyPath(key: Uint8Array): string {
  let out = '';
  for (const byte of key) {
    const ch = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** A key for a list row: its text when it is printable UTF-8, else its hex. */
export function keyLabel(key: Uint8Array): { text: string; binary: boolean } {
  const text = textFromBytes(key);
  // Control characters would render as nothing (or break the row); show those keys as hex.
  // eslint-disable-next-line no-control-regex
  if (text !== null && !/[\u0000-\u001f\u007f]/.test(text)) return { text, binary: false };
  return { text: hexBytes(key), binary: true };
}

export function hexBytes(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');
}

/** A classic hex dump: offset, 16 bytes in hex, the printable ASCII beside them. */
export function hexDump(bytes: Uint8Array): string {
  const lines: string[] = [];
  for (let offset = 0; offset < bytes.length; offset += 16) {
    const row = bytes.subarray(offset, offset + 16);
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${offset.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${ascii}`);
  }
  return lines.join('\n');
}
