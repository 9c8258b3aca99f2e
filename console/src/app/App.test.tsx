import { render, screen, within } from '@testing-library/react';
import { MockEventSource } from '../test/MockEventSource';
import { App } from './App';
import { createQueryClient } from './queryClient';

beforeEach(() => {
  MockEventSource.reset();
  vi.stubGlobal('EventSource', MockEventSource);
  window.location.hash = '';
});

describe('App', () => {
  it('renders the shell with the section tabs and lands on the cluster view', () => {
    render(<App queryClient={createQueryClient()} />);
    const nav = screen.getByRole('navigation', { name: 'Sections' });
    const current = within(nav).getByRole('link', { name: 'Cluster' });
    expect(current).toHaveAttribute('href', '#/cluster');
    expect(current).toHaveAttribute('aria-current', 'page');
    expect(screen.getByRole('heading', { level: 1, name: 'Cluster' })).toBeInTheDocument();
    expect(screen.getByTestId('stream-status')).toBeInTheDocument();
  });

  it('falls back to the first section for an unknown fragment', () => {
    window.location.hash = '#/nope';
    render(<App queryClient={createQueryClient()} />);
    expect(screen.getByRole('heading', { level: 1, name: 'Cluster' })).toBeInTheDocument();
  });

  it('loads another section’s code when it is opened', async () => {
    window.location.hash = '#/keys';
    render(<App queryClient={createQueryClient()} />);
    expect(await screen.findByRole('heading', { level: 1, name: 'Keys' })).toBeInTheDocument();
  });
});
