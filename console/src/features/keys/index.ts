// The keys feature's public surface: the app shell imports only from here.
export { KeysPage } from './components/KeysPage';
// Leases are a lifetime for keys: the Leases section lives here, beside the key codec
// and the value viewer it shows a lease's keys with.
export { LeasesPage } from './components/LeasesPage';
