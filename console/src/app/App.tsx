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
  // A request still in flight went with the old credential, and a query's first request
  // would be joined rather than sent again: it is cancelled first, so its answer is not kept.
  useEffect(
    () =>
      subscribeToken(() => {
        void queryClient.cancelQueries().then(() => queryClient.invalidateQueries());
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
