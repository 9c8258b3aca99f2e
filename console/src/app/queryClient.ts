import { QueryClient } from '@tanstack/react-query';

export function createQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        // Live views get their data pushed over SSE; refetching on focus would only add load.
        refetchOnWindowFocus: false,
        retry: 1,
      },
    },
  });
}
