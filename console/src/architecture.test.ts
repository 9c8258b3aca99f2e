// Proves the feature-folder rule from the style guide: a feature imports only from
// itself and from shared code (src/api, src/components, src/lib), never from another
// feature, and shared code imports no feature at all. Only src/app wires features in.

const sources = import.meta.glob<string>(['./**/*.{ts,tsx}', '!./**/*.d.ts'], {
  query: '?raw',
  import: 'default',
  eager: true,
});

const IMPORT_RE = /(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function resolve(fromFile: string, specifier: string): string {
  const parts = fromFile.split('/').slice(0, -1);
  for (const segment of specifier.split('/')) {
    if (segment === '..') parts.pop();
    else if (segment !== '.') parts.push(segment);
  }
  return parts.join('/');
}

function featureOf(path: string): string | null {
  return /^\.\/features\/([^/]+)\//.exec(path + '/')?.[1] ?? null;
}

function relativeImports(file: string): string[] {
  const text = sources[file] ?? '';
  return [...text.matchAll(IMPORT_RE)]
    .map((match) => match[1] ?? match[2] ?? '')
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => resolve(file, specifier));
}

describe('architecture', () => {
  it('finds the source files it checks', () => {
    expect(Object.keys(sources)).toContain('./features/cluster/components/ClusterPage.tsx');
  });

  it('no feature imports another feature', () => {
    const violations: string[] = [];
    for (const file of Object.keys(sources)) {
      const own = featureOf(file);
      if (!own) continue;
      for (const target of relativeImports(file)) {
        const other = featureOf(target);
        if (other && other !== own) violations.push(`${file} → ${target}`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('shared code imports no feature', () => {
    const shared = Object.keys(sources).filter((file) => /^\.\/(api|components|lib)\//.test(file));
    const violations = shared.flatMap((file) =>
      relativeImports(file)
        .filter((target) => featureOf(target) !== null)
        .map((target) => `${file} → ${target}`),
    );
    expect(violations).toEqual([]);
  });
});
