import type { ReactNode } from 'react';
import { ActionsPage } from '../features/actions';
import { ClusterPage } from '../features/cluster';
import { ElectionsPage } from '../features/elections';
import { IncidentPage } from '../features/incident';
import { KeysPage } from '../features/keys';
import { LoadPage } from '../features/load';
import { StoragePage } from '../features/storage';

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
  { id: 'actions', label: 'Actions', render: () => <ActionsPage /> },
  { id: 'load', label: 'Load', render: () => <LoadPage /> },
];
