import { QueryClientProvider, type QueryClient } from '@tanstack/react-query';
import { AppShell } from '../components/AppShell';
import { sections } from './sections';
import { useHashSection } from './useHashSection';

interface AppProps {
  queryClient: QueryClient;
}

export function App({ queryClient }: AppProps) {
  const requested = useHashSection();
  const active = sections.find((section) => section.id === requested) ?? sections[0];
  return (
    <QueryClientProvider client={queryClient}>
      <AppShell items={sections} activeId={active.id}>
        {active.render()}
      </AppShell>
    </QueryClientProvider>
  );
}
