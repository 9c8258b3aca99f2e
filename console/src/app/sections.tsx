import { lazy, type ReactNode } from 'react';
import { ClusterPage } from '../features/cluster';

// The landing section comes with the app; every other one is its own chunk, fetched
// the first time it is opened (its charts and forms are not needed before).
const ElectionsPage = lazy(() => import('../features/elections').then((m) => ({ default: m.ElectionsPage })));
const StoragePage = lazy(() => import('../features/storage').then((m) => ({ default: m.StoragePage })));
const IncidentPage = lazy(() => import('../features/incident').then((m) => ({ default: m.IncidentPage })));
const KeysPage = lazy(() => import('../features/keys').then((m) => ({ default: m.KeysPage })));
const LeasesPage = lazy(() => import('../features/keys').then((m) => ({ default: m.LeasesPage })));
const ActionsPage = lazy(() => import('../features/actions').then((m) => ({ default: m.ActionsPage })));
const LoadPage = lazy(() => import('../features/load').then((m) => ({ default: m.LoadPage })));

export interface Section {
  /** URL fragment: the section lives at `#/<id>`. */
  id: string;
  /** Tab label in the header. */
  label: string;
  render: () => ReactNode;
}

/**
 * The console's sections, in tab order. A new feature (elections, storage, load, keys)
 * adds one entry here that renders the page exported by its `src/features/<name>/index.ts`.
 * The first entry is the landing section.
 */
export const sections: readonly [Section, ...Section[]] = [
  { id: 'cluster', label: 'Cluster', render: () => <ClusterPage /> },
  { id: 'elections', label: 'Elections', render: () => <ElectionsPage /> },
  { id: 'storage', label: 'Storage', render: () => <StoragePage /> },
  { id: 'incident', label: 'Incident', render: () => <IncidentPage /> },
  { id: 'keys', label: 'Keys', render: () => <KeysPage /> },
  { id: 'leases', label: 'Leases', render: () => <LeasesPage /> },
  { id: 'actions', label: 'Actions', render: () => <ActionsPage /> },
  { id: 'load', label: 'Load', render: () => <LoadPage /> },
];
