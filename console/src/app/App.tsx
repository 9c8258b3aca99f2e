import { QueryClientProvider, type QueryClient } from '@tanstack/react-query';
import { Suspense, useEffect } from 'react';
import { AppShell } from '../components/AppShell';
import { subscribeToken } from '../lib/credential';
import { sections } from './sections';
import { useHashSection } from './useHashSection';

interface AppProps {
  queryClient: QueryClient;
}

export function App({ queryClient }: AppProps) {
  const requested = useHashSection();
  const active = sections.find((section) => section.id === requested) ?? sections[0];
  // Signing in or out changes what the nodes allow: every query asks again, no reload.
  useEffect(
    () =>
      subscribeToken(() => {
        void queryClient.invalidateQueries();
      }),
    [queryClient],
  );
  return (
    <QueryClientProvider client={queryClient}>
      <AppShell items={sections} activeId={active.id}>
        <Suspense fallback={<p role="status">Loading {active.label}…</p>}>{active.render()}</Suspense>
      </AppShell>
    </QueryClientProvider>
  );
}
