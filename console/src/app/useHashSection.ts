import { useSyncExternalStore } from 'react';

function subscribe(onChange: () => void): () => void {
  window.addEventListener('hashchange', onChange);
  return () => {
    window.removeEventListener('hashchange', onChange);
  };
}

function readHash(): string {
  return window.location.hash.replace(/^#\/?/, '');
}

/**
 * The section id in the URL fragment (`#/cluster` → "cluster"). Fragment routing needs
 * no server support, so any static server (vite preview, behind Envoy) can serve the app.
 */
export function useHashSection(): string {
  return useSyncExternalStore(subscribe, readHash, () => '');
}
