import { base64FromBytes, bytesFromBase64, hexDump, keyLabel, keyPath } from './bytes';
import { viewValue } from './valueView';

describe('bytes', () => {
  it('round-trips every byte value through base64', () => {
    // Proves binary keys and values survive the console's encoding unchanged.
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect(bytesFromBase64(base64FromBytes(all))).toEqual(all);
  });

  it('percent-encodes every byte of a key path that is not unreserved', () => {
    // Proves a key with `/`, spaces, `?` or non-ASCII reaches the API as the same bytes.
    expect(keyPath(new TextEncoder().encode('users/a b?é'))).toBe('users%2Fa%20b%3F%C3%A9');
    expect(keyPath(new Uint8Array([0, 255]))).toBe('%00%FF');
  });

  it('labels printable keys as text and others as hex', () => {
    expect(keyLabel(new TextEncoder().encode('page/k01'))).toEqual({ text: 'page/k01', binary: false });
    expect(keyLabel(new Uint8Array([0x6b, 0x00, 0xff]))).toEqual({ text: '6b 00 ff', binary: true });
  });

  it('dumps bytes as offset, hex and printable ASCII', () => {
    expect(hexDump(new Uint8Array([0x00, 0x41, 0xff]))).toBe(`00000000  00 41 ff${' '.repeat(39)}  .A.`);
  });
});

describe('viewValue', () => {
  const utf8 = (text: string) => new TextEncoder().encode(text);

  it('pretty-prints JSON objects and arrays', () => {
    expect(viewValue(utf8('{"a":[1,2]}'))).toEqual({ kind: 'json', text: '{\n  "a": [\n    1,\n    2\n  ]\n}' });
  });

  it('keeps text that only looks like JSON, and bare scalars, as text', () => {
    expect(viewValue(utf8('{not json'))).toEqual({ kind: 'text', text: '{not json' });
    expect(viewValue(utf8('42'))).toEqual({ kind: 'text', text: '42' });
  });

  it('shows invalid UTF-8 and control bytes as a hex dump', () => {
    expect(viewValue(new Uint8Array([0xff, 0xfe])).kind).toBe('binary');
    expect(viewValue(new Uint8Array([0x41, 0x00, 0x42])).kind).toBe('binary');
  });
});
